"""Reader of ``answers`` releases (mechanisms ``bounded_noise`` and ``gaussian``).

>>> r = dpspark.lookup.open_release("releases/answers")      # doctest: +SKIP
>>> r.answers()                      # {"rows": Fraction(...), "avg": Fraction(...), ...}
>>> r.answer("avg")                  # one exact answer (None: a mean over a non-positive noisy count)
>>> r.bound("total")                 # R: |answer - truth| <= R with probability 1 (bounded_noise only)
>>> r.to_pandas()                    # name, kind, value, R, bound95, conditional bounds (floats for display)

Every value is the exact rational the release wrote (the table stores "p/q" strings).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpspark.lookup.statement import StatementLookup
from dpspark.release.errors import ReleaseFormatError

if TYPE_CHECKING:
    import pandas as pd

_SECTION_KEYS = ("mechanism", "k", "queries", "table", "deterministic_bound", "bounds", "noise")
_COLUMNS = ("name", "kind", "value", "R", "bound95", "conditional_bound", "conditional_bound95",
            "noisy_sum", "noisy_count", "condition")
_EXACT = ("value", "R", "bound95", "conditional_bound", "conditional_bound95", "noisy_sum", "noisy_count")


def check_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The ``answers`` section names its keys, an int k >= 1, and a table the release holds."""
    missing = [k for k in _SECTION_KEYS if k not in section]
    if missing:
        raise ReleaseFormatError(f"{name}: the answers section lacks {', '.join(missing)}")
    k = section["k"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ReleaseFormatError(f"{name}: answers.k must be an int >= 1")
    if f"{section['table']}.parquet" not in manifest.files:
        raise ReleaseFormatError(f"{name}: the answers table {section['table']!r} is not among the release files")


def _register() -> None:
    from dpspark.release.statement import register_section_check

    register_section_check("answers", check_section)


_register()


class AnswersLookup(StatementLookup):
    """An opened ``answers`` release: exact answers by query name, with their bounds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        table = self.table(self.section["table"])
        if tuple(table.column_names) != _COLUMNS:
            raise ReleaseFormatError(f"{self.root}: the answers table has columns {table.column_names}")
        rows = table.to_pylist()
        self._rows: dict[str, dict[str, Any]] = {}
        for r in rows:
            try:
                exact = {c: None if r[c] is None else Fraction(r[c]) for c in _EXACT}
            except (ValueError, ZeroDivisionError):
                raise ReleaseFormatError(f"{self.root}: answer {r['name']!r} holds a malformed rational") from None
            self._rows[r["name"]] = {**r, **exact}
        if len(self._rows) != self.section["queries"]:
            raise ReleaseFormatError(f"{self.root}: {len(self._rows)} answers for {self.section['queries']} queries")

    @property
    def deterministic(self) -> bool:
        """True when every answer is within its R with probability 1 (bounded noise)."""
        return bool(self.section["deterministic_bound"])

    def answers(self) -> dict[str, Fraction | None]:
        """Query name -> exact answer (None: a mean whose noisy count was not positive)."""
        return {n: r["value"] for n, r in self._rows.items()}

    def answer(self, name: str) -> Fraction | None:
        """The exact answer to query ``name``."""
        return self._row(name)["value"]

    def bound(self, name: str) -> Fraction | None:
        """R of query ``name``: |answer - true| <= R with probability 1 (None: no such bound for it)."""
        return self._row(name)["R"]

    def bound95(self, name: str) -> Fraction | None:
        """The simultaneous 95% bound of query ``name`` (for a noisy-count mean: its conditional 95% bound)."""
        r = self._row(name)
        return r["bound95"] if r["bound95"] is not None else r["conditional_bound95"]

    def row(self, name: str) -> dict[str, Any]:
        """Every column of query ``name``'s answer, exact."""
        return dict(self._row(name))

    def _row(self, name: str) -> dict[str, Any]:
        try:
            return self._rows[name]
        except KeyError:
            raise KeyError(f"no query named {name!r}; queries: {sorted(self._rows)}") from None

    def to_pandas(self) -> "pd.DataFrame":
        """One row per query: name, kind, value, R, bound95, conditional bounds (floats for display)."""
        import pandas as pd

        def f(v: Any) -> float | None:
            return None if v is None else float(v)  # report

        cols = {c: [] for c in _COLUMNS}
        for r in self._rows.values():
            for c in _COLUMNS:
                cols[c].append(f(r[c]) if c in _EXACT else r[c])
        return pd.DataFrame(cols)  # report

    def describe_lines(self) -> list[tuple[str, str]]:
        """k, the noise and the bound semantics for ``dpspark inspect``."""
        s = self.section
        noise = s["noise"]
        lines = [("answers", f"{s['queries']} queries, k = {s['k']} noisy scalars ({s['mechanism']})"),
                 ("bounds", s["bounds"])]
        if "M" in noise:
            lines.append(("noise", f"bounded noise family {noise.get('family')}, M = {noise['M']}, "
                                   f"|Z| <= {noise['abs_bound_units']} always, all k <= {noise['bound95_units']} "
                                   "w.p. >= 0.95 (units of each answer's sensitivity)"))
        elif "sigma" in noise:
            lines.append(("noise", f"discrete Gaussian sigma = {noise['sigma']}, rho = {noise['rho']}, all k <= "
                                   f"{noise['bound95_units']} w.p. >= 0.95 (units of each answer's sensitivity)"))
        for name, r in list(self._rows.items())[:20]:
            v = "undefined (noisy count <= 0)" if r["value"] is None else f"{float(r['value']):.6g}"  # report
            if r["R"] is not None:
                b = f"within {float(r['R']):.4g} always"  # report
            elif r["bound95"] is not None:
                b = f"within {float(r['bound95']):.4g} w.p. >= 0.95 (all answers)"  # report
            elif r["conditional_bound95"] is not None:
                cb = r["conditional_bound"] if r["conditional_bound"] is not None else r["conditional_bound95"]
                b = f"conditional bound {float(cb):.4g} (see condition)"  # report
            else:
                b = "no bound"
            lines.append((f"  {name}", f"{r['kind']} = {v}, {b}"))
        if len(self._rows) > 20:
            lines.append(("  ...", f"{len(self._rows) - 20} more (to_pandas())"))
        return lines
