"""The pre-pass of a ``groups`` release: how many units the input holds, and how much each one contributes.

:class:`UnitProfileStage` reads the rows the :class:`~dpspark.mechanisms.groups.stage.GroupsStage` reads (after
its rule 0, the public join and the filter, and rule 1, rows with a NULL key or unit dropped) and returns a
:class:`UnitProfile` of exact integers, never released as such:

* ``units`` - the distinct units (every row is a unit without a unit column): the units the truncation to
  ``max_units`` ranks (stage rule 2). One unit moves it by at most 1;
* ``groups_hist`` - the power-of-two histogram (:func:`dpspark.noise.count_quantile.power_histogram`) of each
  unit's number of distinct keys (``by`` values, before the universe filter);
* ``rows_hist`` - the same of each unit's most rows in one key.

Each unit lies in exactly one bucket of each histogram, so one unit moves each by at most 1 in one coordinate
(:mod:`dpspark.noise.count_quantile` releases them). Arrow: ``Table.group_by``; Spark: ``groupBy`` over
``Column`` expressions (no SQL text); both return the same integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpspark.engine.stages import FamilyStage

if TYPE_CHECKING:
    from dpspark.mechanisms.groups.stage import GroupsStage

#: the chosen limits are one of 1, 2, 4, ..., 2^(BUCKETS-1)
BUCKETS = 11


@dataclass(frozen=True)
class UnitProfile:
    """Exact per-input figures (never released; see the module docstring)."""

    units: int
    groups_hist: tuple[int, ...]
    rows_hist: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class UnitProfileStage(FamilyStage):
    """Units and contribution histograms of the rows ``groups`` reads (module docstring)."""

    kernels: ClassVar[dict[str, str]] = {"arrow": "dpspark.mechanisms.groups.unit_profile:arrow_kernel",
                                         "spark": "dpspark.mechanisms.groups.unit_profile:spark_kernel"}

    groups: "GroupsStage"
    buckets: int = BUCKETS


def _profile(units: int, per_unit_groups: np.ndarray, per_unit_rows: np.ndarray, buckets: int) -> UnitProfile:
    from dpspark.noise.count_quantile import power_histogram

    return UnitProfile(units, tuple(power_histogram(per_unit_groups, buckets)),
                       tuple(power_histogram(per_unit_rows, buckets)))


def profile_table(table: Any, stage: UnitProfileStage) -> UnitProfile:
    """The profile of an Arrow table of the rows the groups stage reads (after join, filter and NULL drops)."""
    g = stage.groups
    keys, unit = list(g.key_columns), g.unit_column
    if unit is None:  # every row is a unit, with one key and one row
        ones = np.ones(table.num_rows, dtype=np.int64)
        return _profile(table.num_rows, ones, ones, stage.buckets)
    pairs = table.select([unit, *keys]).group_by([unit, *keys]).aggregate([([], "count_all")])
    per_unit = pairs.group_by([unit]).aggregate([([], "count_all"), ("count_all", "max")])
    groups = np.asarray(per_unit.column("count_all").to_numpy(zero_copy_only=False), dtype=np.int64)
    rows = np.asarray(per_unit.column("count_all_max").to_numpy(zero_copy_only=False), dtype=np.int64)
    return _profile(per_unit.num_rows, groups, rows, stage.buckets)


def arrow_kernel(backend: Any, stage: UnitProfileStage) -> UnitProfile:
    """The profile on Arrow: one scan of the stage's columns."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.inputs import scan_table
    from dpspark.mechanisms.groups.arrow_stats import check_input

    g = stage.groups
    backend.progress(f"pass {backend.passes_run + 1}: units and contributions per unit on Arrow")
    dataset = backend.dataset if isinstance(backend.dataset, ds.Dataset) else ds.dataset(backend.dataset)
    check_input(dataset.schema, g)
    table = scan_table(dataset, g.input_columns)
    if g.join is not None:
        table = g.join.arrow(table)
    if g.filter is not None:
        table = table.filter(g.filter.arrow_mask(table), null_selection_behavior="drop")
    for c in [*g.key_columns, *([g.unit_column] if g.unit_column else [])]:
        table = table.filter(pc.is_valid(table.column(c)))  # always (one code path whatever the NULLs: rule 4)
    out = profile_table(table, stage)
    backend.pass_done()
    return out


def _bucket(col: Any, buckets: int) -> Any:
    """The power-of-two bucket of an integer column (integer comparisons only)."""
    from pyspark.sql import functions as F

    expr = F.lit(buckets - 1)
    for j in range(buckets - 2, -1, -1):
        expr = F.when(col <= F.lit(1 << j), F.lit(j)).otherwise(expr)
    return expr


def spark_kernel(backend: Any, stage: UnitProfileStage) -> UnitProfile:
    """The profile on Spark: two groupBy aggregations of Columns, a B x B table collected."""
    from pyspark.sql import functions as F

    from dpspark.engine.predicate import spark_ref
    from dpspark.mechanisms.groups.spark_stats import _read

    g = stage.groups
    backend.progress(f"pass {backend.passes_run + 1}: units and contributions per unit on Spark")
    rows = _read(backend.frame, g)
    keys, unit = list(g.key_columns), g.unit_column
    b = stage.buckets
    groups_hist, rows_hist = [0] * b, [0] * b
    if unit is None:
        units = rows.count()
        groups_hist[0] = rows_hist[0] = units
    else:
        pairs = rows.groupBy(*[spark_ref(c) for c in [unit, *keys]]).agg(F.count(F.lit(1)).alias("_rows"))
        per_unit = pairs.groupBy(spark_ref(unit)).agg(F.count(F.lit(1)).alias("_groups"),
                                                      F.max("_rows").alias("_most"))
        table = per_unit.groupBy(_bucket(F.col("_groups"), b).alias("_bg"), _bucket(F.col("_most"), b).alias("_br")) \
            .agg(F.count(F.lit(1)).alias("_n")).collect()
        units = 0
        for row in table:  # at most B x B rows
            groups_hist[row["_bg"]] += row["_n"]
            rows_hist[row["_br"]] += row["_n"]
            units += row["_n"]
    backend.pass_done()
    return UnitProfile(int(units), tuple(groups_hist), tuple(rows_hist))
