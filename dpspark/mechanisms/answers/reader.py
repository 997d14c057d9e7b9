"""Reader of ``answers`` releases (mechanisms ``bounded_noise`` and ``gaussian``).

>>> r = dpspark.lookup.open_release("releases/answers")      # doctest: +SKIP
>>> r.answers()                      # {"rows": Fraction(...), "avg": Fraction(...), ...}
>>> r.answer("avg")                  # one exact answer (None: a mean over a non-positive noisy count)
>>> r.bound("total")                 # R: |answer - truth| <= R with probability 1 (bounded_noise only)
>>> r.to_pandas()                    # name, kind, value, R, bound95, ... (floats), then value_exact, R_exact, ...

Every value is the exact rational the release wrote (the table stores "p/q" strings).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dpspark.lookup.statement_base import StatementLookup
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_frac
from dpspark.mechanisms.answers.section import _BOUNDS, _COLUMNS, _EXACT, _MAX_BITS, check_section  # noqa: F401

if TYPE_CHECKING:
    import pandas as pd


class AnswersLookup(StatementLookup):
    """An opened ``answers`` release: exact answers by query name, with their bounds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        name = self.section["table"]
        table = self.checked_table(name, [(c, pa.string()) for c in _COLUMNS], self.section["queries"])
        where = self.root / f"{name}.parquet"
        kinds = {q["name"]: q["kind"] for q in self.parameters["queries"]}
        noisy = {q["name"] for q in self.parameters["queries"] if q.get("mean") == "noisy_count"}
        self._rows: dict[str, dict[str, Any]] = {}
        for i, r in enumerate(table.to_pylist()):
            if not isinstance(r["name"], str) or r["name"] in self._rows or kinds.get(r["name"]) != r["kind"]:
                raise ReleaseFormatError(f"{where}: row {i} does not answer a query of mechanism.parameters.queries "
                                         "once, with its kind")
            shown = repr(r["name"])[:80]  # a public query name, cut: the message stays one short line
            row = _checked_row(r, self.deterministic, f"{where}: answer {shown}")
            if (row["noisy_count"] is not None) != (r["name"] in noisy):
                raise ReleaseFormatError(f"{where}: answer {shown} is not the mean mechanism.parameters states")
            self._rows[r["name"]] = row

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
        """One row per query: name, kind, value, R, bound95, conditional bounds, noisy parts and the condition as
        floats for reading, then each of those values exact beside them (``<column>_exact``: "p/q" strings)."""
        import pandas as pd

        from dpspark.lookup.frames import exact_columns

        rows = list(self._rows.values())
        cols: dict[str, Any] = {}
        exact: dict[str, Any] = {}
        for c in _COLUMNS:
            if c in _EXACT:
                both = exact_columns(c, [r[c] for r in rows])
                cols[c], exact[f"{c}_exact"] = both[c], both[f"{c}_exact"]
            else:
                cols[c] = [r[c] for r in rows]
        frame = pd.DataFrame({**cols, **exact})  # report
        bounds = self.chosen_bounds()
        if bounds:
            frame.attrs["bounds"] = bounds
        return frame

    def chosen_bounds(self) -> dict[str, Any]:
        """The bounds chosen privately (``parameters.bounds``; empty when every query had its own): ``share``,
        ``epsilon_each``, and per query the exact ``lo``, ``hi``, ``scale_bits`` it ran with and
        ``units_clipped_at_most`` (units whose total the bounds clip, with probability >= ``confidence``)."""
        b = self.parameters.get("bounds")
        if not b or not b.get("queries"):
            return {}
        listed = {q.get("name"): q for q in self.parameters.get("queries", [])}
        try:
            queries = {n: {"lo": Fraction(str(r["lo"])), "hi": Fraction(str(r["hi"])),
                           "scale_bits": int(listed[n]["scale_bits"]),
                           "units_clipped_at_most": int(r["units_clipped_at_most"]),
                           "confidence": Fraction(str(r["clipped_bound_confidence"]))}
                       for n, r in b["queries"].items()}
            return {"share": Fraction(str(b["share"])), "epsilon_each": Fraction(str(b["epsilon_each"])),
                    "queries": queries}
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            raise ReleaseFormatError(f"{self.root / 'manifest.json'}: parameters.bounds is malformed") from None

    def lookup_rows(self, names: list[str], as_json: bool = False,
                    exact: bool = False) -> tuple[list[tuple[str, ...]], list[str], list[str]]:
        """``dpspark lookup``: a header and one row per query name (every query when ``names`` is empty): kind,
        answer and its bound (decimals, bounds rounded up; ``exact``: the exact rationals), then the position-only
        complaints for names that are no query of this release. ``as_json`` reads each name as a JSON string."""
        import json

        from dpspark.lookup.display import safe_text

        rows: list[tuple[str, ...]] = [("query", "kind", "answer", "error bar")]
        bad: list[str] = []
        for pos, text in enumerate(names or list(self._rows), start=1):
            name = text
            if as_json:
                try:
                    name = json.loads(text)
                except ValueError:
                    name = None
            row = self._rows.get(name) if isinstance(name, str) else None
            if row is None:
                bad.append(f"key #{pos}: no query of this release has this name")
                rows.append((f"(key #{pos}: invalid)", "-", "-", "-"))
                continue
            rows.append((safe_text(name), row["kind"], *_answer_cells(row, exact)))
        return rows, bad, []

    def accuracy_words(self, exact: bool = False) -> str:
        """The accuracy in words: each answer's bounds in its own units (first 20), then the claims (in units
        of each answer's sensitivity, as the manifest states them)."""
        from dpspark.text import bound_text
        from dpspark.text.statements import accuracy_words

        claims = accuracy_words(self.manifest.accuracy, exact)
        if exact:
            return claims

        def at_most(x: Fraction) -> str:
            text = bound_text(x)
            return "<= " + text[2:] if text.startswith("= ") else text

        lines = ["In each answer's own units:"]
        for name, r in list(self._rows.items())[:20]:
            parts = []
            if r["R"] is not None:
                parts.append(f"{at_most(r['R'])} always")
            if r["bound95"] is not None:
                parts.append(f"{at_most(r['bound95'])} with probability >= 0.95 (all answers at once)")
            cond = r["conditional_bound"] if r["conditional_bound"] is not None else r["conditional_bound95"]
            if cond is not None:
                parts.append(f"{at_most(cond)} on a condition ({r['condition']})")
            lines.append(f"  {name}: |noisy - true| " + (", ".join(parts) if parts else "has no bound (undefined)"))
        if len(self._rows) > 20:
            lines.append(f"  ... {len(self._rows) - 20} more (to_pandas())")
        return "\n".join(lines) + "\n" + claims

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
        for name, c in self.chosen_bounds().get("queries", {}).items():
            lines.append((f"bounds of {name}", f"chosen privately: [{c['lo']}, {c['hi']}], scale_bits "
                                               f"{c['scale_bits']}; at most {c['units_clipped_at_most']} units' totals "
                                               f"clipped (w.p. >= {float(c['confidence']):.4g})"))  # report
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


def _answer_cells(r: dict[str, Any], exact: bool) -> tuple[str, str]:
    """(answer, error bar) of one answer row for a table: decimals with the bound rounded up (``exact``: rationals)."""
    from dpspark.text import short
    from dpspark.text.decimals import bar_decimal, value_decimal

    def num(x: Fraction) -> str:
        return short(x, True) if exact else value_decimal(x)

    def bar(x: Fraction) -> str:
        return "+- " + (short(x, True) if exact else bar_decimal(x))

    value = "undefined (noisy count <= 0)" if r["value"] is None else num(r["value"])
    if r["R"] is not None:
        return value, f"{bar(r['R'])} always"
    if r["bound95"] is not None:
        return value, f"{bar(r['bound95'])} w.p. >= 0.95 (all answers at once)"
    cond = r["conditional_bound"] if r["conditional_bound"] is not None else r["conditional_bound95"]
    if cond is not None:
        return value, f"{bar(cond)} on a condition (see below)"
    return value, "no bound"


def _checked_row(r: dict[str, Any], deterministic: bool, where: str) -> dict[str, Any]:
    """One answer, exact, with every value's type and range checked (ReleaseFormatError naming ``where``)."""
    try:
        exact = {c: None if r[c] is None else str_to_frac(r[c], _MAX_BITS) for c in _EXACT}
    except ValueError:
        raise ReleaseFormatError(f"{where} holds a malformed rational") from None
    if not isinstance(r["condition"], str) or any(exact[c] is not None and exact[c] < 0 for c in _BOUNDS):
        raise ReleaseFormatError(f"{where}: a bound is negative or the condition is not a string")
    noisy_mean = r["kind"] == "mean" and exact["noisy_count"] is not None
    if noisy_mean:  # a mean over a noisy count: value = noisy_sum / noisy_count, conditional bounds only
        count, total = exact["noisy_count"], exact["noisy_sum"]
        ok = (total is not None and count.denominator == 1 and exact["R"] is None and exact["bound95"] is None
              and r["condition"].startswith("conditional"))
        if ok and count > 0:
            ok = (exact["value"] == total / count and exact["conditional_bound95"] is not None
                  and (exact["conditional_bound"] is not None) == deterministic)
        elif ok:
            ok = exact["value"] is None and exact["conditional_bound"] is None and exact["conditional_bound95"] is None
    else:
        ok = (exact["value"] is not None and exact["bound95"] is not None and exact["noisy_sum"] is None
              and exact["conditional_bound"] is None and exact["conditional_bound95"] is None
              and (exact["R"] is not None) == deterministic)
    if not ok:
        raise ReleaseFormatError(f"{where}: its values and bounds do not fit a {r['kind']} answer")
    return {**r, **exact}
