"""Spark side of an ``answers`` release: every scalar statistic of a query batch in ONE pass.

Each scalar becomes a derived per-row column (a column of ones for a count, ``column * 2^scale_bits`` for a
sum, each masked to 0 where the query's filter is not true), and one
:class:`~dpspark.engine.stages.SumsStage` over all of them computes the exact decimal(38,0) totals of the
per-unit clipped values (:func:`dpspark.spark.sums.clipped_sums`). The derived columns are deterministic
functions of one row, so a unit's contribution stays bounded by its clip range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from dpspark.engine.stages import SumsStage
from dpspark.mechanisms.answers_queries import QueryError, Scalar

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def derived_name(j: int) -> str:
    """The derived column of scalar j."""
    return f"__dp_a{j}"


def scalar_stage(scalars: Sequence[Scalar], unit_column: str | None, max_units: int) -> SumsStage:
    """The one sums stage of a batch (scale 0: the derived columns are already in fixed point)."""
    return SumsStage(columns=tuple(derived_name(j) for j in range(len(scalars))), lo=tuple(s.lo for s in scalars),
                     hi=tuple(s.hi for s in scalars), scale_bits=0, unit_column=unit_column, max_units=max_units)


def derived_frame(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None) -> "DataFrame":
    """``df`` reduced to (unit, one derived column per scalar); a bad column or filter fails here, before any job."""
    return df.select(*derived_columns(df, scalars, unit_column))


def derived_columns(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None) -> list:
    """(unit,) plus one derived column per scalar, checked against ``df`` (analysis only, no job)."""
    from pyspark.sql import functions as F
    from pyspark.sql.utils import AnalysisException

    from dpspark.spark.counts import check_columns

    check_columns(df, sorted({s.column for s in scalars if s.column is not None}
                             | ({unit_column} if unit_column else set())))
    cols = [F.col(unit_column)] if unit_column else []
    for j, s in enumerate(scalars):
        if s.column is None:
            value = F.lit(1.0)
        else:  # exact power of two: the product is x's double scaled, rounded to an integer by the stage
            value = F.col(s.column).cast("double") * F.lit(float(1 << s.scale_bits))  # report: input preprocessing
        if s.filter is not None:
            try:
                cond = F.expr(s.filter)
                df.select(F.when(cond, F.lit(1)).alias("__dp_check")).schema  # analysis only (a boolean?): no job runs
            except AnalysisException as err:  # ParseException derives from AnalysisException
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                raise QueryError(f"query {s.label.split('#')[0]!r}: filter {s.filter!r} is not a valid predicate "
                                 f"on this input: {first}") from None
            value = F.when(cond, value).otherwise(F.lit(0.0))
        cols.append(value.alias(derived_name(j)))
    return cols


def scalar_totals(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None, max_units: int) -> list[int]:
    """The exact integer statistic of every scalar, in one Spark pass.

    Without histogram groups (:mod:`dpspark.engine.answers_plan`): one SumsStage over the derived
    columns. With them: one pass that stacks (group, value) pairs - a histogram key per group's row value
    and one constant key per derived scalar - and aggregates count and exact decimal sum per pair.
    """
    from dpspark.engine.answers_plan import split
    from dpspark.spark.sums import clipped_sums, sum_column

    groups, rest = split(scalars, unit_column)
    if not groups:
        stage = scalar_stage(scalars, unit_column, max_units)
        table = clipped_sums(derived_frame(df, scalars, unit_column), stage, None)
        row = table.to_pylist()[0] if table.num_rows else {}
        return [int(row.get(sum_column(derived_name(j))) or 0) for j in range(len(scalars))]
    return _stacked_totals(df, scalars, groups, rest)


def _stacked_totals(df: "DataFrame", scalars: Sequence[Scalar], groups: list, rest: list[int]) -> list[int]:
    """Row-level batches (every row a unit): histogram groups and derived scalars in one aggregation."""
    from pyspark.sql import functions as F

    from dpspark.engine.answers_plan import totals_from_histogram
    from dpspark.spark.counts import check_columns

    check_columns(df, sorted({s.column for s in scalars if s.column is not None}))
    guard = F.lit(2.0 ** 52)  # report: |L|, |H| < 2^52, so the clip below is exact in double

    def fixed(column: str, bits: int):  # type: ignore[no-untyped-def]
        x = F.coalesce(F.col(column).cast("double"), F.lit(0.0)) * F.lit(float(1 << bits))  # report: input preprocessing
        return F.round(F.least(F.greatest(x, -guard), guard), 0)  # report: HALF_UP like the sums stage

    entries = []
    for g, grp in enumerate(groups):
        v = F.least(F.greatest(fixed(grp.column, grp.scale_bits), F.lit(float(grp.L))), F.lit(float(grp.H)))  # report: exact integers < 2^52
        entries.append(F.struct(F.lit(g).alias("g"), v.cast("decimal(38,0)").alias("v"),
                                F.lit(1).cast("decimal(38,0)").alias("w")))
    if rest:
        from dpspark.spark.sums import _row_value

        frame = df.select("*", *derived_columns(df, [scalars[j] for j in rest], None))

        for i, j in enumerate(rest):
            s = scalars[j]
            val = _row_value(derived_name(i), 0, s.delta)
            clipped = F.least(F.greatest(val, F.lit(s.lo).cast("decimal(38,0)")), F.lit(s.hi).cast("decimal(38,0)"))
            entries.append(F.struct(F.lit(len(groups) + i).alias("g"), F.lit(0).cast("decimal(38,0)").alias("v"),
                                    clipped.alias("w")))
    else:
        frame = df
    stacked = frame.select(F.explode(F.array(*entries)).alias("e")).select("e.g", "e.v", "e.w")
    agg = stacked.groupBy("g", "v").agg(F.count(F.lit(1)).alias("c"), F.sum("w").cast("decimal(38,0)").alias("s"))
    rows = agg.toArrow().to_pylist()
    out = [0] * len(scalars)
    per_group: dict[int, tuple[list[int], list[int]]] = {g: ([], []) for g in range(len(groups))}
    for r in rows:
        g = int(r["g"])
        if g < len(groups):
            per_group[g][0].append(int(r["v"]))
            per_group[g][1].append(int(r["c"]))
        else:
            out[rest[g - len(groups)]] = int(r["s"] or 0)
    for g, grp in enumerate(groups):
        for j, t in totals_from_histogram(*per_group[g], grp, scalars).items():
            out[j] = t
    return out
