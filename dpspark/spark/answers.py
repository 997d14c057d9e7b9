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
    return df.select(*cols)


def scalar_totals(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None, max_units: int) -> list[int]:
    """The exact integer statistic of every scalar, in one Spark pass."""
    from dpspark.spark.sums import clipped_sums, sum_column

    stage = scalar_stage(scalars, unit_column, max_units)
    table = clipped_sums(derived_frame(df, scalars, unit_column), stage, None)
    row = table.to_pylist()[0] if table.num_rows else {}
    return [int(row.get(sum_column(derived_name(j))) or 0) for j in range(len(scalars))]
