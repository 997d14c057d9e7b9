"""The ``groups`` release's payload: one Parquet table of released groups, the section and the statements.

The table ``groups.parquet`` holds the key columns (``groups.by``, in order), then per aggregate ``<name>``:

* ``<name>`` - the exact released value as a string ("p/q"; null: undefined);
* ``<name>_float`` - the same as a float64, for display only (never used in a check or a statement);
* ``<name>_error`` - the exact error bar (value units, or rows of rank for a quantile) holding with
  probability >= ``<name>_confidence``;
* ``<name>_confidence`` - that probability, exact (1 - beta; 1 for a mean without a positive noisy count);
* ``<name>_always`` - a probability-1 bound (bounded noise), exact, or null.

An aggregate with ``post = "sqrt"`` (a standard deviation, SQL's ``STDDEV_POP``) is a variance: its columns hold
the exact released variance and its bar, and the section's aggregate says ``"post": "sqrt"`` so that every
reader shows the square root and its interval (:mod:`dpspark.lookup.stddev`).

The statements (privacy, accuracy) are the general statements envelope's
(:func:`dpspark.release.statements.write_statement_release` stores the payload).
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from dpspark.mechanisms.groups.aggregates import Kind

if TYPE_CHECKING:
    import pyarrow as pa

    from dpspark.mechanisms.groups.algorithm import GroupsPlan, GroupsRelease

TABLE = "groups"
#: the columns of one aggregate, by suffix, in table order
SUFFIXES = ("", "_float", "_error", "_confidence", "_always")
NULLS_TEXT = ("per value column (parameters.aggregates[].nulls): \"drop\" - a NULL, NaN or unparseable value "
              "is neither aggregated nor counted - or the public value it counts as; +-inf are clipped to the "
              "aggregate's bounds; identical on the Arrow and Spark engines")
BOUNDS_TEXT = ("each group's <name>_error holds with probability >= <name>_confidence (each statistic at "
               "beta / m, union bound); <name>_always, when present, holds with probability 1 (bounded noise); "
               "a quantile's error is in rows of rank: at most q n + error rows lie in cells below the released point's "
               "and at most (1 - q) n + error above it")


def table_columns(by: Sequence[str], names: Sequence[str]) -> list[str]:
    """Every column of the release table, in order."""
    return [*by, *(f"{n}{s}" for n in names for s in SUFFIXES)]


def _text(v: Fraction | None) -> str | None:
    return None if v is None else str(v)


#: int64 values at most this in magnitude are exact as float64 (and so is their correctly rounded quotient)
EXACT_FLOAT = 1 << 53


def exact_texts(nums: Sequence[int], den: int) -> tuple["pa.Array", "pa.Array"]:
    """(str(Fraction(x, den)), float(Fraction(x, den))) for every x (den > 0) as Arrow string and float64
    arrays, without a Fraction each: the reduced "p/q" (or "p"), and the correctly rounded quotient, as
    Fraction's own. Released values are public, so which way runs may depend on them: numpy when every x and
    den are at most 2^53 (exact as doubles: one IEEE division is the correctly rounded quotient), else
    Python ints."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        arr = np.asarray(nums, dtype=np.int64) if den <= EXACT_FLOAT else None
    except OverflowError:
        arr = None
    if arr is None or (len(arr) and (int(arr.min()) < -EXACT_FLOAT or int(arr.max()) > EXACT_FLOAT)):
        return _python_texts(nums, den)
    floats = pa.array(arr / den, type=pa.float64())  # report (exact operands: the correctly rounded quotient)
    if den == 1:
        return pa.array(arr, type=pa.int64()).cast(pa.string()), floats
    g = np.gcd(arr, np.int64(den))  # >= 1 (den >= 1); gcd(0, den) = den
    p, q = pa.array(arr // g, type=pa.int64()).cast(pa.string()), pa.array(den // g, type=pa.int64())
    joined = pc.binary_join_element_wise(p, q.cast(pa.string()), "/")
    return pc.if_else(pc.equal(q, 1), p, joined), floats


def _python_texts(nums: Sequence[int], den: int) -> tuple["pa.Array", "pa.Array"]:
    """:func:`exact_texts` in Python ints (values past 2^53)."""
    import pyarrow as pa

    floats = [x / den for x in nums]  # report (int / int is correctly rounded, as float(Fraction) is)
    texts = []
    for x in nums:
        g = gcd(x, den)
        q = den // g
        texts.append(str(x // g) if q == 1 else f"{x // g}/{q}")
    return pa.array(texts, type=pa.string()), pa.array(floats, type=pa.float64())


def _exact_columns(name: str, col: Any, n: int) -> dict[str, "pa.Array"]:
    """An :class:`~dpspark.mechanisms.groups.algorithm.ExactColumn`'s five table columns."""
    import pyarrow as pa

    texts, floats = exact_texts(col.nums, col.den)
    return {name: texts, f"{name}_float": floats,
            **{f"{name}{suffix}": pa.array([_text(x)] * n, type=pa.string())
               for suffix, x in (("_error", col.error), ("_confidence", col.confidence), ("_always", col.always))}}


def groups_table(plan: "GroupsPlan", released: "GroupsRelease", by: Sequence[str], key_rows: Sequence[tuple],
                 key_types: Sequence["pa.DataType"], key_arrays: Sequence["pa.Array"] | None = None) -> "pa.Table":
    """The release table (see the module docstring); ``key_rows[i]`` is released group i's key (or
    ``key_arrays``: the key columns, already built)."""
    import pyarrow as pa

    from dpspark.mechanisms.groups.algorithm import ExactColumn

    cols: dict[str, Any] = {}
    for j, (name, typ) in enumerate(zip(by, key_types)):
        cols[name] = key_arrays[j] if key_arrays is not None else pa.array([r[j] for r in key_rows], type=typ)
    columns = getattr(released, "columns", {})
    for agg in plan.aggregates:
        col = columns.get(agg.name)
        if isinstance(col, ExactColumn):
            cols.update(_exact_columns(agg.name, col, len(col)))
            continue
        vals = col if col is not None else [v[agg.name] for v in released.values]
        memo: dict[int, str | None] = {}  # bars and confidences are shared objects: one text each

        def shared(x: Fraction | None) -> str | None:
            got = memo.get(id(x), memo)
            if got is memo:
                got = memo[id(x)] = _text(x)
                keep.append(x)  # the id stays this object's while the memo lives
            return got  # type: ignore[return-value]

        keep: list[Any] = []
        cols[agg.name] = pa.array([_text(v.value) for v in vals], type=pa.string())
        cols[f"{agg.name}_float"] = pa.array([None if v.value is None else float(v.value) for v in vals],  # report
                                             type=pa.float64())
        for suffix in ("_error", "_confidence", "_always"):
            field = [getattr(v, suffix[1:]) for v in vals]
            first = field[0] if field else None
            if all(x is first for x in field):  # one shared bar (counts, sums, quantiles): one text
                texts = [_text(first)] * len(field)
            else:
                texts = [shared(x) for x in field]
            cols[f"{agg.name}{suffix}"] = pa.array(texts, type=pa.string())
    return pa.table(cols)


def _aggregate_rows(plan: "GroupsPlan") -> list[dict[str, Any]]:
    out = []
    for agg in plan.aggregates:
        law = plan.laws[agg.name]
        quantile = agg.kind is Kind.QUANTILE
        out.append({"name": agg.name, "kind": agg.kind.value,
                    "error_unit": "rank_rows" if quantile else "value",
                    "noise": law.describe()["noise"] if quantile else law.kind,  # single or joint
                    "condition": ("" if agg.kind in (Kind.COUNT, Kind.SUM, Kind.QUANTILE) else
                                  "the group has >= 1 row; the bound uses the released noisy count")})
        if agg.post is not None:  # the table keeps the exact variance; readers show its square root
            out[-1]["post"] = agg.post
    return out


def section(mech: Any, rows: int) -> dict[str, Any]:
    """The kind's manifest section."""
    return {"table": TABLE, "by": list(mech.groups.by),
            "keys": "public" if mech.key_rows is not None else "private",
            "groups": rows, "universe": mech.universe.to_dict(), "aggregates": _aggregate_rows(mech.planned),
            "beta": str(mech.planned.beta), "bounds": BOUNDS_TEXT, "nulls": NULLS_TEXT,
            "composition": ("charged once per aggregate's noisy statistic (a statistic shared by several aggregates, "
                            "as a count that a sum is centred on, once): a unit changes at most max_groups_per_unit "
                            "groups and each law covers all groups at once (parallel composition over disjoint "
                            "groups)")}


def accuracy_statement(plan: "GroupsPlan") -> Any:
    """Per-group bars that are the same for every group (counts, sums, quantiles); the rest are in the table."""
    from dpspark.privacy import AccuracyClaim, AccuracyStatement

    claims = []
    for agg in plan.aggregates:
        err = plan.errors[agg.name]
        if agg.kind is Kind.QUANTILE:
            claims.append(AccuracyClaim(f"{agg.name}: rank error (rows) of the released point", err,
                                        plan.beta, "per_query"))
        elif agg.kind is Kind.COUNT:
            claims.append(AccuracyClaim(f"{agg.name}: abs error", err[0], plan.beta, "per_query"))
        elif agg.kind is Kind.SUM:
            claims.append(AccuracyClaim(f"{agg.name}: abs error", Fraction(err[0], agg.scale), plan.beta,
                                        "per_query"))
    notes = ("per group and aggregate, the release table states the exact error bar (<name>_error) with its "
             "confidence; means and variances state a bound computed from the released noisy count, conditional "
             "on the group having at least one row")
    return AccuracyStatement(claims, notes)


def statement_release(mech: Any, released: "GroupsRelease") -> Any:
    """The :class:`~dpspark.release.statements.StatementRelease` of a groups release."""
    from dpspark.release.statements import StatementRelease

    types = [part.arrow_type() for part in mech.universe.parts]
    arrays = key_columns(mech.universe, released.keys, types)
    key_rows = [] if arrays is not None else [mech.key_of(k) for k in released.keys]
    return StatementRelease(
        algorithm=THEOREM, parameters=mech.plan(), privacy=tuple(mech.planned_statements()),
        accuracy=accuracy_statement(mech.planned), section=section(mech, len(released.keys)),
        tables={TABLE: groups_table(mech.planned, released, mech.groups.by, key_rows, types, arrays)})


def key_columns(universe: Any, keys: Sequence[int], types: Sequence["pa.DataType"]) -> list["pa.Array"] | None:
    """The key columns of the groups with these 0-based universe indexes, decoded column-wise by each
    component's :meth:`key_arrays` (a tuple index split by its public multipliers); None when there are no
    keys or a component has no such decoder (the caller decodes key by key)."""
    parts = universe.parts
    if not keys or not all(callable(getattr(p, "key_arrays", None)) for p in parts):
        return None
    if len(parts) == 1:
        per = [[k + 1 for k in keys]]
    else:
        per, mults = [[] for _ in parts], universe.multipliers
        for k in keys:  # per key divmod on Python ints (indexes may pass 2^63)
            for j, m in enumerate(mults):
                q, k = divmod(k, m)
                per[j].append(q + 1)
    try:
        return [p.key_arrays(idx)[0].cast(t) for p, idx, t in zip(parts, per, types)]
    except ValueError:  # no such layout for this component kind: key by key
        return None


THEOREM = ("grouped aggregates (docs/groups.md): exact integer noise per statistic calibrated over all groups with "
           "k coordinates changed (parallel composition over disjoint groups), sequential composition over "
           "aggregates")
