"""Arrow side of an ``answers`` release: the same exact scalar statistics as :mod:`dpspark.spark.answers`.

Values are rounded as Spark rounds them (round(x * 2^b), half away from zero, NULL as 0), clipped per row
to [-Delta, Delta] and per unit (the row, or the ``unit_column`` group) to [lo, hi], and summed as exact
Python integers. Query filters are Spark SQL predicates and are refused here (see
:mod:`dpspark.mechanisms.answers_queries`): run such a batch on the Spark engine.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from dpspark.mechanisms.answers_queries import QueryError, Scalar

#: per-row values are computed in float64 and must stay exactly representable
MAX_ARROW_DELTA = 1 << 52


def check_arrow(scalars: Sequence[Scalar]) -> None:
    """Refuse, before reading data, a batch the Arrow engine cannot compute exactly."""
    for s in scalars:
        name = s.label.split("#")[0]
        if s.filter is not None:
            raise QueryError(f"query {name!r} has a filter (a Spark SQL predicate); filters run on the Spark engine "
                             "only: use engine 'spark' (dpspark release --master local[2]) or drop the filter")
        if s.delta >= MAX_ARROW_DELTA:
            raise QueryError(f"query {name!r}: clip bound x 2^scale_bits >= 2^52 is too wide for the Arrow engine; "
                             "use the Spark engine or a smaller scale")


def _fixed(values: Any, bits: int, bound: int) -> np.ndarray:
    """round(x * 2^bits) half away from zero, NULL -> 0, clipped to [-bound, bound], as int64."""
    x = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0) * float(1 << bits)  # report: input preprocessing
    r = np.sign(x) * np.floor(np.abs(x) + 0.5)  # report: Spark's HALF_UP
    return np.clip(r, -bound, bound).astype(np.int64)


def scalar_totals_arrow(dataset: Any, scalars: Sequence[Scalar], unit_column: str | None) -> list[int]:
    """The exact integer statistic of every scalar, in one scan of ``dataset`` (a pyarrow dataset or table)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    check_arrow(scalars)
    names = sorted({s.column for s in scalars if s.column is not None} | ({unit_column} if unit_column else set()))
    present = set(dataset.schema.names)
    missing = [c for c in names if c not in present]
    if missing:
        from dpspark.spark.counts import InputError

        raise InputError(f"input has no column(s) {', '.join(map(repr, missing))}; it has "
                         f"{', '.join(map(repr, sorted(present)))}")
    table = dataset.to_table(columns=names) if hasattr(dataset, "to_table") else dataset.select(names)
    if unit_column is not None:
        table = table.filter(pc.is_valid(table[unit_column]))
    rows = table.num_rows
    from dpspark.engine.answers_plan import split, totals_from_histogram

    groups, rest = split(scalars, unit_column)
    hist: dict[int, int] = {}
    for grp in groups:  # many row-level sums of one column: one histogram (answers_plan)
        col = table[grp.column].cast(pa.float64()).to_numpy(zero_copy_only=False)
        v = np.clip(_fixed(col, grp.scale_bits, 1 << 52), grp.L, grp.H)
        values, counts = np.unique(v, return_counts=True)
        hist.update(totals_from_histogram(values.tolist(), counts.tolist(), grp, scalars))
    per_row: dict[str, np.ndarray] = {}
    for j, s in enumerate(scalars):
        if j in hist:
            continue
        if s.column is None:
            per_row[f"a{j}"] = np.ones(rows, dtype=np.int64)
        else:
            col = table[s.column].cast(pa.float64()).to_numpy(zero_copy_only=False)
            per_row[f"a{j}"] = _fixed(col, s.scale_bits, s.delta)
    if unit_column is None:
        units = per_row
    else:  # per-unit totals (int64: rows of one unit x 2^52 can overflow only beyond 2^11 rows at the bound)
        t = pa.table({"u": table[unit_column], **{k: pa.array(v) for k, v in per_row.items()}})
        g = t.group_by("u").aggregate([(k, "sum") for k in per_row])
        units = {k: np.asarray(g[f"{k}_sum"].to_numpy(zero_copy_only=False), dtype=object) for k in per_row}
    out = []
    for j, s in enumerate(scalars):
        if j in hist:
            out.append(hist[j])
            continue
        v = units[f"a{j}"]
        clipped = np.clip(v, s.lo, s.hi)
        out.append(int(sum(int(x) for x in clipped)) if clipped.dtype == object else int(clipped.sum(dtype=object)))
    return out
