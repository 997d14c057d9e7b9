"""Spark side of an ``answers`` release: every scalar statistic of a query batch in ONE pass.

Scalars with a clip bound x 2^scale_bits below 2^52 (the Arrow kernel's range) run as Arrow partitions
(:mod:`dpspark.mechanisms.answers.spark_arrow`): Spark reads each needed column once, and the Arrow kernel's
own arithmetic and filters run inside ``mapInArrow``, so the plan does not grow with the number of scalars
and the two engines compute the same values by the same code.

Wider scalars (and unit columns of a type the Arrow kernel does not compare) take the column-per-scalar
plan, :func:`column_totals`: each scalar becomes a derived per-row column (:func:`spark_value`: a column of
ones for a count, the clipped, rounded ``column * 2^scale_bits`` for a sum with the query's null rule, each 0
where the query's filter is not TRUE; the filter is compiled from :mod:`dpspark.engine.predicate`, never
``F.expr``), and one :class:`~dpspark.engine.stages.SumsStage` over all of them computes the exact
decimal(38,0) totals of the per-unit clipped values (:func:`dpspark.engine.spark.sums.clipped_sums`). Spark
compiles that plan into one generated method, which passes the JVM's 64 KB limit at about 100 scalars and
then runs interpreted (minutes); the Arrow partitions have no such cliff. The derived values are
deterministic functions of one row, so a unit's contribution stays bounded by its clip range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from dpspark.engine.stages import SumsStage
from dpspark.mechanisms.answers.queries import QueryError, Scalar

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.answers.stage import ScalarTotalsStage


def totals_kernel(backend: "SparkBackend", stage: "ScalarTotalsStage") -> list[int]:
    """The stage's exact totals on Spark: one pass over the backend's input."""
    backend.progress(f"pass {backend.passes_run + 1}: {len(stage.scalars)} clipped sums on Spark")
    out = scalar_totals(backend.frame, stage.scalars, stage.unit_column, stage.max_units)
    backend.pass_done()
    backend.progress("counts collected on the driver")
    return out


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


def spark_types(df: "DataFrame") -> dict[str, Any]:
    """The input's Spark types by column name (analysis only)."""
    return {f.name: f.dataType for f in df.schema.fields}


def spark_value(s: Scalar, dtypes: dict[str, Any], bound: int | None = None) -> "Column":
    """The scalar's per-row value as a double holding an integer, exactly as the Arrow engine computes it.

    x = spark_numeric(column) (NULL for NULL, NaN, unparseable text; +-inf kept); x 2^b is clipped in double
    to [-bound, bound] (exact for bound < 2^52; past it only a guard, the sums stage clips exactly on
    decimals) BEFORE rounding, so no infinity reaches a round or a decimal cast (ANSI-safe); rounded half up
    (Spark's HALF_UP on the double, equal to the Arrow engine's exact half-away rounding below 2^52); a NULL is
    the imputed value or 0 (drop); 0 where the filter is not TRUE or, for a noisy-count mean's count, the
    value is NULL. No cast or function here can raise on a data value.
    """
    from pyspark.sql import functions as F

    bound = s.delta if bound is None else bound
    check_scalar(s, dtypes)
    cond = s.filter.spark_column(dtypes) if s.filter is not None else None
    if s.present is not None:
        ok = _numeric(s, s.present, dtypes).isNotNull()
        cond = ok if cond is None else cond & ok
    if s.column is None:
        value = F.lit(1.0)
    else:
        x = _numeric(s, s.column, dtypes)
        g = F.lit(float(bound) if bound < 1 << 52 else 1e37)  # report: exact below 2^52; a cast guard above
        y = F.least(F.greatest(x * F.lit(float(1 << s.scale_bits)), -g), g)  # report: input preprocessing
        imputed = s.imputed(bound)
        value = F.when(x.isNull(), F.lit(float(imputed or 0))).otherwise(F.round(y, 0))  # report: HALF_UP
    if cond is not None:
        value = F.when(cond, value).otherwise(F.lit(0.0))  # NULL (not TRUE) is not a pass
    return value


def check_scalar(s: Scalar, dtypes: dict[str, Any]) -> None:
    """The scalar's data-free checks against the input's Spark types (:class:`QueryError` naming the query)."""
    from dpspark.engine.predicate import IsNull, PredicateError, _check_kind, _leaves, _spark_kind, _values

    for c in (s.column, s.present):
        if c is not None and c not in dtypes:
            raise QueryError(f"query {s.query_name!r}: the input has no column {c!r}")
    for c in (s.filter.columns() if s.filter is not None else ()):
        if c not in dtypes:
            raise QueryError(f"query {s.query_name!r}: filter {s.filter.text!r} names column {c!r}, which the "
                             "input does not have")
    if s.filter is not None:
        from fractions import Fraction

        for leaf in _leaves(s.filter.tree):  # Predicate.spark_column's checks, in its order
            kind = _spark_kind(dtypes[leaf.column])
            if kind == "null" or isinstance(leaf, IsNull):
                continue
            try:
                _check_kind(leaf, kind, isinstance(_values(leaf)[0], Fraction))
            except PredicateError as err:
                raise QueryError(f"query {s.query_name!r}: filter {s.filter.text!r}: {err}") from None
    for c in (s.present, s.column):
        if c is not None:
            _numeric_type(s, c, dtypes)


def _numeric_type(s: Scalar, column: str, dtypes: dict[str, Any]) -> Any:
    from pyspark.sql.types import BooleanType, NullType, NumericType, StringType

    dtype = dtypes[column]
    if not isinstance(dtype, (NumericType, StringType, BooleanType, NullType)):
        raise QueryError(f"query {s.query_name!r}: column {column!r} has Spark type {dtype.simpleString()}, "
                         "not a number")
    return dtype


def _numeric(s: Scalar, column: str, dtypes: dict[str, Any]) -> "Column":
    from dpspark.engine.numeric import spark_numeric
    from dpspark.engine.predicate import spark_ref

    return spark_numeric(spark_ref(column), _numeric_type(s, column, dtypes))


def derived_columns(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None) -> list:
    """(unit,) plus one derived column per scalar, checked against ``df`` (analysis only, no job)."""
    from pyspark.sql import functions as F

    from dpspark.engine.spark.counts import check_columns

    check_columns(df, sorted({s.column for s in scalars if s.column is not None}
                             | ({unit_column} if unit_column else set())))
    dtypes = spark_types(df)
    cols = [F.col(unit_column)] if unit_column else []
    for j, s in enumerate(scalars):
        cols.append(spark_value(s, dtypes).alias(derived_name(j)))
    return cols


def scalar_totals(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None, max_units: int) -> list[int]:
    """The exact integer statistic of every scalar, in one Spark pass (module docstring).

    Every check (columns, types, filters) runs first, from the schema alone, before any job.
    """
    from dpspark.engine.predicate import _spark_kind
    from dpspark.engine.spark.counts import check_columns
    from dpspark.mechanisms.answers.arrow_totals import MAX_ARROW_DELTA
    from dpspark.mechanisms.answers.spark_arrow import arrow_totals

    check_columns(df, sorted({s.column for s in scalars if s.column is not None}
                             | ({unit_column} if unit_column else set())))
    dtypes = spark_types(df)
    for s in scalars:
        check_scalar(s, dtypes)
    kinds = {c: _spark_kind(t) for c, t in dtypes.items()}
    ready = arrow_ready(scalars, unit_column, dtypes)
    fast = [j for j, s in enumerate(scalars) if ready and s.delta < MAX_ARROW_DELTA]
    slow = sorted(set(range(len(scalars))) - set(fast))
    out = [0] * len(scalars)
    for j, t in zip(fast, arrow_totals(df, [scalars[j] for j in fast], unit_column, dtypes, kinds)):
        out[j] = t
    if slow:
        for j, t in zip(slow, column_totals(df, [scalars[j] for j in slow], unit_column, max_units)):
            out[j] = t
    return out


#: Spark types of a unit column whose Arrow values compare as Spark groups them
_UNIT_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType",
               "StringType", "BinaryType", "BooleanType", "DateType", "TimestampType", "TimestampNTZType")


def arrow_ready(scalars: Sequence[Scalar], unit_column: str | None, dtypes: dict[str, Any]) -> bool:
    """Whether the Arrow partitions compute this batch as Spark SQL would (schema only): a unit column of a
    plain type, and strings compared byte-wise (no collation other than Spark's default UTF8_BINARY)."""
    from pyspark.sql.types import StringType

    if unit_column is not None and type(dtypes[unit_column]).__name__ not in _UNIT_TYPES:
        return False
    read = {c for s in scalars for c in s.columns()} | ({unit_column} if unit_column else set())
    return all(getattr(dtypes[c], "collation", "UTF8_BINARY") == "UTF8_BINARY"
               for c in read if isinstance(dtypes[c], StringType))


def column_totals(df: "DataFrame", scalars: Sequence[Scalar], unit_column: str | None, max_units: int) -> list[int]:
    """The exact integer statistic of every scalar by the column-per-scalar plan (module docstring).

    Without histogram groups (:mod:`dpspark.mechanisms.answers.plan`): one SumsStage over the derived
    columns. With them: one pass that stacks (group, value) pairs - a histogram key per group's row value
    and one constant key per derived scalar - and aggregates count and exact decimal sum per pair.
    """
    from dpspark.mechanisms.answers.plan import split
    from dpspark.engine.spark.sums import clipped_sums, sum_column

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

    from dpspark.mechanisms.answers.plan import totals_from_histogram
    from dpspark.engine.spark.counts import check_columns

    check_columns(df, sorted({s.column for s in scalars if s.column is not None}))
    dtypes = spark_types(df)

    entries = []
    for g, grp in enumerate(groups):
        rep = scalars[grp.members[0]]  # the members share column, scale, null rule and filter
        fixed = spark_value(rep, dtypes, (1 << 52) - 1)
        v = F.least(F.greatest(fixed, F.lit(float(grp.L))), F.lit(float(grp.H)))  # report: exact integers < 2^52
        entries.append(F.struct(F.lit(g).alias("g"), v.cast("decimal(38,0)").alias("v"),
                                F.lit(1).cast("decimal(38,0)").alias("w")))
    if rest:
        from dpspark.engine.spark.sums import _row_value

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
