"""Reader of ``groups`` releases: aggregates per group, each with its exact error bar.

>>> r = dpspark.lookup.open_release("releases/carriers")      # doctest: +SKIP
>>> r.to_pandas()            # key columns, per aggregate <name> and <name>_error (a quantile's: <name>_rank_error),
...                          # then the exact strings
>>> r.lookup("AA")           # {"flights": Entry(value=Fraction(...), error=..., confidence=...), ...}
>>> r.lookup(("AA", 2013))   # several key columns: a tuple

Every value is the exact rational the release wrote (the table stores "p/q" strings); the float columns of the
table are for display only and must agree with the exact ones. An aggregate whose section entry says
``"post": "sqrt"`` (SQL's ``STDDEV_POP``) holds a variance exactly; every view here (``to_pandas``,
``dpspark lookup``, ``inspect``, ``plot``) shows its square root with the bar's interval mapped through the root
(:mod:`dpspark.lookup.stddev`), and :meth:`GroupsLookup.lookup` keeps the exact variance (``Entry.post``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dpspark.lookup.statement_base import StatementLookup
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_frac

if TYPE_CHECKING:
    import pandas as pd

    from dpspark.universe import Universe

#: bits of a value's numerator or denominator (the writer's are a few hundred at most)
_MAX_BITS = 4096
#: the columns of one aggregate: (suffix, Arrow type)
_AGG_COLUMNS = (("", pa.string()), ("_float", pa.float64()), ("_error", pa.string()), ("_confidence", pa.string()),
                ("_always", pa.string()))
_KEY_TYPES = (pa.string(), pa.int64(), pa.binary())


@dataclass(frozen=True)
class Entry:
    """One released aggregate of one group: the exact ``value`` (None: undefined), ``error`` holding w.p. >=
    ``confidence``, ``always`` a probability-1 bound (bounded noise) or None; ``error_unit`` "value" or
    "rank_rows"; ``condition`` when the bound holds (empty: always)."""

    value: Fraction | None
    error: Fraction | None
    confidence: Fraction
    always: Fraction | None
    error_unit: str
    condition: str
    #: "sqrt": ``value`` and ``error`` are a variance's, shown as the standard deviation (:meth:`stddev`)
    post: str | None = None

    def stddev(self) -> tuple[float | None, ...]:
        """(sd, lo, hi, error) of a ``post = "sqrt"`` entry: display floats (:func:`dpspark.lookup.stddev.stddev_bar`)."""
        from dpspark.lookup.stddev import stddev_bar

        return stddev_bar(self.value, self.error)


class GroupsLookup(StatementLookup):
    """An opened ``groups`` release: the released groups, by key, with every aggregate and its error bar."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sec = self.section
        self.by: tuple[str, ...] = tuple(sec["by"])
        self.aggregates: list[dict[str, Any]] = list(sec["aggregates"])
        name = sec["table"]
        table = self.table(name)
        where = self.root / f"{name}.parquet"
        key_schema = [(c, table.schema.field(c).type if c in table.column_names else None) for c in self.by]
        if any(t not in _KEY_TYPES for _, t in key_schema):
            raise ReleaseFormatError(f"{where}: the key columns {list(self.by)} must be string, int64 or binary")
        schema = key_schema + [(f"{a['name']}{s}", t) for a in self.aggregates for s, t in _AGG_COLUMNS]
        table = self.checked_table(name, schema, sec["groups"])
        self._table = table
        keys = list(zip(*(table.column(c).to_pylist() for c in self.by))) if table.num_rows else []
        if any(v is None for k in keys for v in k) or len(set(keys)) != len(keys):
            raise ReleaseFormatError(f"{where}: every released group has one key, listed once")
        join = self.manifest.parameters.get("join")
        #: global answers (no GROUP BY): one public group, keyed by the constant column a private join added
        self.is_global: bool = isinstance(join, dict) and [join.get("global_key")] == list(self.by)
        if self.is_global and keys != [(0,)]:
            raise ReleaseFormatError(f"{where}: a global release (no GROUP BY) has one group, of key 0")
        self._entries: dict[tuple[Any, ...], dict[str, Entry]] = {k: {} for k in keys}
        for a in self.aggregates:
            n = a["name"]
            cols = [table.column(f"{n}{s}").to_pylist() for s, _ in _AGG_COLUMNS]
            memo: dict[Any, Any] = {}  # bars and confidences repeat across groups: check each triple once
            for key, (v, f, e, c, al) in zip(keys, zip(*cols)):
                self._entries[key][n] = _entry(v, f, e, c, al, a, f"{where}: aggregate {n!r}", memo)

    # --- keys ---------------------------------------------------------------------------------
    @cached_property
    def universe(self) -> "Universe":
        """The key universe (public keys: the listed values; private selection: the configured universe)."""
        from dpspark.universe import UniverseConfigError, universe_from_dict

        try:
            return universe_from_dict(self.section["universe"])
        except UniverseConfigError as err:
            raise ReleaseFormatError(f"{self.root / 'manifest.json'}: groups.universe: {err}") from None

    def keys(self) -> list[Any]:
        """The released keys in table order (scalars for one key column, tuples for several)."""
        return [k[0] if len(self.by) == 1 else k for k in self._entries]

    def _key(self, key: Any) -> tuple[Any, ...]:
        if key is None and self.is_global:  # global answers: the one group, without a key
            return (0,)
        return tuple(key) if isinstance(key, (tuple, list)) else (key,)

    def __contains__(self, key: Any) -> bool:
        return self._key(key) in self._entries

    def lookup(self, key: Any = None) -> dict[str, Entry]:
        """Every aggregate of group ``key`` (a scalar, or a tuple for several key columns), exact. A global release
        (no ``GROUP BY``, :attr:`is_global`): ``lookup()`` without a key (its one group's fixed key is 0).

        A ``KeyError`` when the group was not released (not a public key, or not selected); the message
        does not echo the key.
        """
        try:
            return dict(self._entries[self._key(key)])
        except KeyError:
            raise KeyError("no released group has this key") from None

    def value(self, key: Any, aggregate: str) -> Fraction | None:
        """The exact released value of ``aggregate`` for group ``key`` (None for a global release's one group)."""
        return self.lookup(key)[aggregate].value

    # --- tables -------------------------------------------------------------------------------
    def to_arrow(self) -> pa.Table:
        """The release table as written (exact strings, display floats)."""
        return self._table

    def to_pandas(self) -> "pd.DataFrame":
        """Key columns (none for a global release: one row), then per aggregate ``<name>`` and its error bar for
        reading, then the exact values beside
        them: ``<name>_exact``, the error's ``..._exact`` ("p/q" strings) and ``<name>_confidence`` (the error bar
        holds with at least this probability, a float).

        The error bar's column names its unit: ``<name>_error`` is in the value's units, a quantile's
        ``<name>_rank_error`` in rows of rank (the released value is within that many rows of the true quantile's
        rank, not within that many value units). A count whose values are all integers is an integer column
        (pandas ``Int64``); other values are floats. A quantile of a release that also has a count gets
        ``<name>_uninformative`` (:meth:`uninformative`) after its bar. A standard deviation (``post = "sqrt"``)
        has ``<name>``, ``<name>_error``, ``<name>_lo`` and ``<name>_hi`` (the root and its interval), then its
        variance as released, ``<name>_variance`` and ``<name>_variance_error`` (exact: ``..._exact``).
        """
        import pandas as pd

        from dpspark.lookup.frames import exact_columns

        # a global release (no GROUP BY) is one row of aggregates: its constant key column is not shown
        cols: dict[str, Any] = {} if self.is_global else {c: self._table.column(c).to_pylist() for c in self.by}
        exact: dict[str, Any] = {}
        flags = self.uninformative()
        for a in self.aggregates:
            n = a["name"]
            entries = [e[n] for e in self._entries.values()]
            if a.get("post") == "sqrt":
                _stddev_columns(n, entries, cols, exact)
                continue
            error_name = error_column(a)
            for col, values in ((n, [e.value for e in entries]), (error_name, [e.error for e in entries])):
                both = exact_columns(col, values)
                cols[col] = _integers(values) if a["kind"] == "count" else both[col]
                exact[f"{col}_exact"] = both[f"{col}_exact"]
            if n in flags:
                cols[f"{n}_uninformative"] = flags[n]
            exact[f"{n}_confidence"] = [float(e.confidence) for e in entries]  # report
        frame = pd.DataFrame({**cols, **exact})
        words = self.units_words()
        if words:  # the noisy unit count against max_units, in words (post-processing of a DP output)
            frame.attrs["units"] = words
            if self.section["units"]["noisy"] > self.section["units"]["max_units"]:
                import warnings

                warnings.warn(f"{self.root}: {words}", UserWarning, stacklevel=2)
        if self.limits_words():
            frame.attrs["limits"] = self.limits_words()
        bounds = self.chosen_bounds()
        if bounds:
            frame.attrs["bounds"] = bounds
        return frame

    def chosen_bounds(self) -> dict[str, Any]:
        """The bounds chosen privately (issue 32 §2), from the manifest's ``parameters.bounds``; empty when every
        aggregate had its own. ``share`` of epsilon and the bounds step's ``epsilon``, then per column the exact
        ``lo`` and ``hi`` (Fractions), ``scale_bits``, and ``rows_clipped_at_most`` (the rows outside [lo, hi],
        with probability >= ``confidence``). Public parameters and DP outputs only."""
        b = self.parameters.get("bounds")
        if not b or not b.get("columns"):
            return {}
        try:
            columns = {c: {"lo": Fraction(str(r["lo"])), "hi": Fraction(str(r["hi"])),
                           "scale_bits": int(r["scale_bits"]), "rows_clipped_at_most": int(r["rows_clipped_at_most"]),
                           "confidence": Fraction(str(r["clipped_bound_confidence"]))}
                       for c, r in b["columns"].items()}
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            raise ReleaseFormatError(f"{self.root / 'manifest.json'}: parameters.bounds is malformed") from None
        return {"share": Fraction(str(b["share"])), "epsilon": str(b["epsilon"]), "columns": columns}

    def uninformative(self) -> dict[str, list[bool]]:
        """Per quantile (when the release has a count), per group in table order: True where the quantile's stated
        rank bar is >= the group's released count (or the count is <= 0).

        The bar says the released point's rank is within e rows of the requested rank; when e >= N~ that covers
        every rank of the group, so the point says nothing about the group's values (a near-uniform draw on the
        grid). Post-processing of released values only. The count counts every kept row, and a quantile's rows
        are those with a value, so with nulls the flag errs towards False (it never flags an informative value
        for a reason the bar does not give).
        """
        count = next((a["name"] for a in self.aggregates if a["kind"] == "count"), None)
        if count is None:
            return {}
        out: dict[str, list[bool]] = {}
        for a in self.aggregates:
            if a["error_unit"] != "rank_rows":
                continue
            n = a["name"]
            out[n] = [e[n].error is None or e[count].value is None or e[n].error >= e[count].value
                      for e in self._entries.values()]
        return out

    def html_note(self) -> str:
        """Under the values in a notebook: what a quantile's error column counts (rows of rank, not values)."""
        ranks = [a["name"] for a in self.aggregates if a["error_unit"] == "rank_rows"]
        units = self.units_words()
        units = f"Units: {units}" if units else ""
        if not ranks:
            return units
        cols = ", ".join(f"{n}_rank_error" for n in ranks)
        return (f"{cols}: the error bar of a quantile is in rows of rank, not in the value's units: the released "
                "value's rank among the group's rows is within that many rows of the requested quantile's rank."
                + (f" {units}" if units else ""))

    # --- units read (post-processing of the release's noisy count) -------------------------
    def units_words(self) -> str:
        """In words: the noisy count of the units read against max_units, and about how many units the
        truncation to max_units dropped (noisy count - max_units, +- its bar); without a declared max_units (the
        fixed cap) only the count, and no "MORE than max_units" sentence. Empty for a release without it."""
        u = self.section.get("units")
        if not u:
            return ""
        from dpspark.privacy.relations import UNITS_CAP
        from dpspark.text import confidence, readable

        noisy, a, n = u["noisy"], u["error"], u["max_units"]
        conf = confidence(Fraction(str(u["beta"])))
        head = (f"about {readable(noisy)} units read (noisy count, +-{readable(a)} w.p. >= {conf}; "
                f"{u['share']} of epsilon)")
        if n == UNITS_CAP:  # no max_units declared: nothing to exceed (the cap is the count's own range)
            return f"{head}; no max_units declared (no limit on the number of units): no unit was dropped."
        if noisy > n:
            low = max(noisy - n - a, 0)
            return (f"{head}: MORE than max_units = {readable(n)}. About {readable(noisy - n)} units (between "
                    f"{readable(low)} and {readable(noisy - n + a)}, w.p. >= {conf}) were dropped by the truncation to "
                    f"max_units: every count and sum covers only the units kept. Raise max_units to at least "
                    f"{readable(noisy + a)} to keep them all.")
        if noisy + a > n:
            return (f"{head}: close to max_units = {readable(n)}; up to about {readable(noisy + a - n)} units may have "
                    "been dropped by the truncation to max_units.")
        return f"{head}: within max_units = {readable(n)}; no unit was dropped (w.p. >= {conf})."

    def limits_words(self) -> str:
        """In words: the contribution limits chosen privately ("auto"), if any."""
        lim = self.section.get("limits")
        if not lim:
            return ""
        return (f"max_groups_per_unit = {lim['max_groups_per_unit']}, max_rows_per_group = "
                f"{lim['max_rows_per_group']}; chosen privately for {', '.join(lim['auto'])} (covering about "
                f"{lim['cover']} of units; {lim['share']} of epsilon)")

    # --- words --------------------------------------------------------------------------------
    def _confidence(self) -> str:
        """1 - beta as a decimal (rounded down), for words."""
        from dpspark.text import confidence

        return confidence(Fraction(str(self.section["beta"])))

    def aggregate_words(self) -> list[str]:
        """One line per aggregate: its kind, noise and what its error bar means."""
        out = []
        for a in self.aggregates:
            unit = "rows of rank" if a["error_unit"] == "rank_rows" else "value units"
            cond = f"; holds when {a['condition']}" if a["condition"] else ""
            if a.get("post") == "sqrt":
                out.append(f"{a['name']}: standard deviation, the square root of a released variance (noise "
                           f"{a['noise']}); its interval is the variance bar's mapped through the root, w.p. >= "
                           f"{self._confidence()}{cond}")
                continue
            out.append(f"{a['name']}: {a['kind']}, noise {a['noise']}, error bar in {unit} w.p. >= "
                       f"{self._confidence()}{cond}")
        return out

    def describe_lines(self) -> list[tuple[str, str]]:
        """``dpspark inspect``: the groups, keys and aggregates."""
        sec = self.section
        lines = [("groups", "global (no GROUP BY): one public group, the rows of the private join with "
                  f"{self.manifest.parameters['join'].get('table')}") if self.is_global else
                 ("groups", f"{sec['groups']} released, by {', '.join(self.by)} ({sec['keys']} keys)")]
        lines += [("  aggregate", w) for w in self.aggregate_words()]
        lines.append(("composition", sec["composition"]))
        lines.append(("nulls", sec["nulls"]))
        if self.units_words():
            lines.append(("units", self.units_words()))
        if self.limits_words():
            lines.append(("limits", self.limits_words()))
        return lines

    def plot_bars(self, top: int) -> list[dict[str, Any]]:
        """``dpspark plot``: one panel per aggregate, the first ``top`` groups in table order, with error bars
        (a quantile's bar is in rows of rank, so it is drawn without one; ``muted``: the bars drawn grey, a
        quantile's value that :meth:`uninformative` flags)."""
        keys = list(self._entries)[:top]
        labels = ["global"] if self.is_global else [", ".join(str(v) for v in k) for k in keys]
        flags = self.uninformative()
        panels = []
        for a in self.aggregates:
            n = a["name"]
            entries = [self._entries[k][n] for k in keys]
            rank = a["error_unit"] == "rank_rows"
            if a.get("post") == "sqrt":  # the standard deviation and its symmetric bar (contains the interval)
                roots = [e.stddev() for e in entries]
                panels.append({
                    "title": f"{n} (standard deviation, {a['noise']}): bars hold w.p. >= {self._confidence()}",
                    "labels": labels, "xlabel": ", ".join(self.by), "ylabel": n,
                    "values": [r[0] or 0.0 for r in roots], "errors": [r[3] or 0.0 for r in roots],  # report
                    "muted": [False] * len(keys)})
                continue
            grey = flags.get(n, [False] * len(self._entries))[:top]
            title = f"{n} ({a['kind']}, {a['noise']}): " + (
                "rank error in rows, not drawn" if rank else f"bars hold w.p. >= {self._confidence()}")
            if any(grey):
                title += "; grey: rank bar >= the group's count (uninformative)"
            panels.append({
                "title": title, "labels": labels, "xlabel": ", ".join(self.by), "ylabel": n,
                "values": [0.0 if e.value is None else float(e.value) for e in entries],  # report
                "errors": [0.0 if rank or e.error is None else float(e.error) for e in entries],  # report
                "muted": grey,
            })
        return panels

    def lookup_rows(self, texts: list[str], as_json: bool = False,
                    exact: bool = False) -> tuple[list[tuple[str, ...]], list[str], list[str]]:
        """``dpspark lookup``: a header and one row per key text (value +- error per aggregate, decimals; ``exact``:
        the exact rationals), the position-only complaints for invalid keys (not keys of the universe, or bad
        syntax; the key is never echoed), and notes for valid keys the private selection did not release."""
        from dpspark.errors import DPSparkError
        from dpspark.lookup.display import safe_text

        names = [a["name"] for a in self.aggregates]
        rows: list[tuple[str, ...]] = [("key", *names)]
        bad: list[str] = []
        unreleased: list[str] = []
        private = self.section.get("keys") == "private"
        for pos, text in enumerate(texts, start=1):
            try:
                key = _parse_key(self.universe, text, as_json)
            except DPSparkError as err:
                bad.append(f"key #{pos}: {err}")
                rows.append((f"(key #{pos}: invalid)", *("-" for _ in names)))
                continue
            if key not in self and not _in_universe(self.universe, key):
                bad.append(f"key #{pos}: not a key of the release's universe ({self.universe.words})")
                rows.append((f"(key #{pos}: invalid)", *("-" for _ in names)))
                continue
            if key not in self:
                if private:  # a key of the universe the private selection did not release: a valid answer
                    unreleased.append(f"key #{pos}")
                    rows.append((f"(key #{pos}: not released)", *("-" for _ in names)))
                else:
                    bad.append(f"key #{pos}: not one of the release's public keys")
                    rows.append((f"(key #{pos}: invalid)", *("-" for _ in names)))
                continue
            entries = self.lookup(key)
            rows.append((safe_text(text), *(_shown(entries[n], exact) for n in names)))
        notes = []
        if unreleased:
            notes.append(f"{', '.join(unreleased)}: a valid key that was not released: the keys were selected "
                         "privately, and a group is released only when its noisy count passes the selection "
                         "threshold (a key with few or no units is not released)")
        return rows, bad, notes


def error_column(aggregate: dict[str, Any]) -> str:
    """The name of an aggregate's error column in ``to_pandas()``: ``<name>_rank_error`` for a bar in rows of rank
    (a quantile), else ``<name>_error`` (value units)."""
    suffix = "_rank_error" if aggregate["error_unit"] == "rank_rows" else "_error"
    return f"{aggregate['name']}{suffix}"


def _integers(values: list[Fraction | None]) -> Any:
    """``values`` as a pandas ``Int64`` column when every one is an integer that fits int64 (None: missing), else
    floats."""
    import pandas as pd

    if all(v is None or (v.denominator == 1 and -(1 << 63) <= v.numerator < 1 << 63) for v in values):
        return pd.Series([None if v is None else int(v) for v in values], dtype="Int64")
    return [None if v is None else float(v) for v in values]  # report


def _in_universe(universe: "Universe", key: Any) -> bool:
    """Whether ``key`` is a key of ``universe`` (public parameters only: no data is read)."""
    from dpspark.universe import OutOfUniverseError

    try:
        universe.encode(key)
    except (OutOfUniverseError, ValueError, TypeError):
        return False
    return True


def _parse_key(universe: "Universe", text: str, as_json: bool) -> Any:
    import json

    from dpspark.errors import ParameterError

    if as_json:
        try:
            return universe.parse_json(json.loads(text))
        except ValueError:
            raise ParameterError("--key-json: a KEY is not valid JSON") from None
    return universe.parse_text(text)


def _stddev_columns(n: str, entries: list[Entry], cols: dict[str, Any], exact: dict[str, Any]) -> None:
    """``to_pandas()`` columns of a standard deviation (display floats) and of the variance it is the root of."""
    from dpspark.lookup.frames import exact_columns

    roots = [e.stddev() for e in entries]
    for i, suffix in ((0, ""), (3, "_error"), (1, "_lo"), (2, "_hi")):
        cols[f"{n}{suffix}"] = [r[i] for r in roots]
    for col, values in ((f"{n}_variance", [e.value for e in entries]),
                        (f"{n}_variance_error", [e.error for e in entries])):
        both = exact_columns(col, values)
        cols[col] = both[col]
        exact[f"{col}_exact"] = both[f"{col}_exact"]
    exact[f"{n}_confidence"] = [float(e.confidence) for e in entries]  # report


def _shown(e: Entry, exact: bool = False) -> str:
    """One aggregate in a lookup row: ``46.4271 +- 2.35`` (a rank bar: ``+- 22.5 rows``); ``exact``: rationals. A
    standard deviation: ``12.3 in [11.9, 12.8]`` (its interval; ``exact``: the exact variance it is the root of)."""
    from dpspark.text import rounded, short
    from dpspark.text.decimals import bar_decimal, value_decimal

    if e.value is None:
        return "undefined"
    if e.post == "sqrt":
        if exact:
            bar = "" if e.error is None else f" +- {short(e.error, True)}"
            return f"sqrt of variance {short(e.value, True)}{bar}"
        sd, lo, hi, _ = e.stddev()
        text = value_decimal(Fraction(sd))
        if lo is None or hi is None:
            return text
        return f"{text} in [{rounded(Fraction(lo), 3, up=False)[0]}, {rounded(Fraction(hi), 3, up=True)[0]}]"
    value = short(e.value, True) if exact else value_decimal(e.value)
    if e.error is None:
        return value
    bar = short(e.error, True) if exact else bar_decimal(e.error)
    return f"{value} +- {bar}" + (" rows of rank" if e.error_unit == "rank_rows" else "")


def _bars(e: Any, c: Any, al: Any, where: str) -> tuple[Fraction | None, Fraction, Fraction | None]:
    """(error, confidence, always), exact and checked: bars >= 0, confidence in (0, 1]."""
    try:
        error, always = (None if x is None else str_to_frac(x, _MAX_BITS) for x in (e, al))
        conf = str_to_frac(c, _MAX_BITS)
    except (ValueError, TypeError):
        raise ReleaseFormatError(f"{where}: a value is not an exact rational") from None
    if (error is not None and error < 0) or (always is not None and always < 0) or not 0 < conf <= 1:
        raise ReleaseFormatError(f"{where}: an error bar is negative or a confidence is outside (0, 1]")
    return error, conf, always


def _entry(v: Any, f: Any, e: Any, c: Any, al: Any, agg: dict[str, Any], where: str,
           memo: dict[Any, Any] | None = None) -> Entry:
    """One exact entry, checked: exact texts, the display float agrees, bars >= 0, confidence in (0, 1].

    ``memo`` keeps the checked (error, confidence, always) of texts that repeat across groups; a value is
    parsed and checked each time.
    """
    memo = {} if memo is None else memo
    triple = memo.get((e, c, al))
    if triple is None:
        triple = memo[(e, c, al)] = _bars(e, c, al, where)
    try:
        value = None if v is None else str_to_frac(v, _MAX_BITS)
    except (ValueError, TypeError):
        raise ReleaseFormatError(f"{where}: a value is not an exact rational") from None
    if (value is None) != (f is None) or (value is not None and value.numerator / value.denominator != f):  # report
        raise ReleaseFormatError(f"{where}: the display float differs from the exact value")
    return Entry(value, triple[0], triple[1], triple[2], agg["error_unit"], agg["condition"], agg.get("post"))
