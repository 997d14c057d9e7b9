"""The one stage a ``groups`` release declares: exact per-group statistics after contribution bounding.

Kernels: :func:`dpspark.mechanisms.groups.arrow_stats.groups_kernel` and
:func:`dpspark.mechanisms.groups.spark_stats.groups_kernel`. Both run the same numpy core
(:mod:`dpspark.mechanisms.groups.core`) on every unit's rows, so they return identical results for the
same seed. The rules, in order:

0. with a public ``join`` (:class:`~dpspark.mechanisms.groups.join.PublicJoin`), each row is joined to at
   most m rows of a public table (m its key multiplicity: a row-level transformation, as the filter below;
   the rules below then bound each unit's joined rows); with a private join
   (:class:`~dpspark.mechanisms.groups.private_join.PrivateJoin`), each table is truncated per unit and joined
   on the unit (a unit's joined rows are a function of its own rows); then,
   with a ``filter`` (:class:`~dpspark.engine.predicate.Predicate`), only the rows where it is TRUE are read
   (SQL three-valued logic, the same on both engines). A row-level transformation: whether a row passes
   depends on that row alone, so a unit's filtered rows are a function of its own rows, adding or removing
   a unit still adds or removes only that unit's (filtered) rows, and every guarantee below is unchanged
   (the filter is public: it is in the manifest);
1. rows with a NULL key column (or a NULL unit) are dropped;
2. more than ``max_units`` units: the n units with the smallest keyed hash of the unit id are kept (the
   CountsStage "truncate" rule, counting every unit with a non-NULL key);
3. keys outside ``universe`` are dropped, or fail the stage (``out_of_universe = "error"``, a value-free
   :class:`~dpspark.engine.errors.CuratorError`), checked on the rows of the kept units (a text integer
   that does not parse is dropped, never an error, as in the CountsStage). Without a unit column every row
   is a unit: of the in-universe rows, the n first in (keyed row hash (below), index, value bits) order
   are kept;
4. each unit keeps at most k = ``max_groups_per_unit`` of its groups: those with the smallest keyed hash
   of (unit, universe index), ties by index (the CountsStage rule);
5. each unit keeps at most c = ``max_rows_per_group`` rows in each kept group: those with the smallest
   keyed *row hash* - xxhash64 chained over (unit, index word, each value column's float64 bits after the
   null read, -0.0 as 0.0, NULL as one fixed word), mixed under a key derived from
   ``backend.batch_secret()`` (which also keys rules 2 and 4, as in the CountsStage) - ties by those bits. The choice depends on the unit's own rows only, and two rows it cannot tell apart contribute
   the same values, so which of them is kept changes nothing;
6. per group and aggregate, the raw tuple of :func:`dpspark.mechanisms.groups.aggregates.derive` over the
   kept rows: count (N,), sum/mean (N, T), variance (N, T, Q), quantile the ``bins`` cell counts; a value
   column's NULL (NULL, NaN, unparseable text) follows its declared :class:`~dpspark.engine.numeric.NullRule`
   (``drop``: the row is neither summed nor counted by that aggregate, but it still is one of the c rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.engine.predicate import Predicate
from dpspark.engine.stages import FamilyStage
from dpspark.mechanisms.groups.aggregates import Aggregate

if TYPE_CHECKING:
    from dpspark.universe import Universe


@dataclass(frozen=True, eq=False)
class GroupsStage(FamilyStage):
    """Exact :class:`~dpspark.mechanisms.groups.algorithm.GroupStats` per group, in one pass over the input.

    ``backend.compute(stage)`` returns them ascending by 0-based universe index (the ``key``), one per
    group with at least one kept row, as a :class:`~dpspark.mechanisms.groups.core.PassStats` whose
    ``units_read`` is the exact number of units read (after rule 1; never released as such).
    """

    kernels: ClassVar[dict[str, str]] = {"arrow": "dpspark.mechanisms.groups.arrow_stats:groups_kernel",
                                         "spark": "dpspark.mechanisms.groups.spark_stats:groups_kernel"}

    key_columns: tuple[str, ...]
    universe: "Universe"
    unit_column: str | None
    max_units: int
    max_groups_per_unit: int
    max_rows_per_group: int
    aggregates: tuple[Aggregate, ...]
    out_of_universe: str = "drop"
    count_units: bool = False
    #: weighted key selection (k > 1): w(m) per unit keeping m keys; the units statistic is then the weighted score
    unit_weights: tuple[int, ...] = ()
    nulls: tuple[tuple[str, Any], ...] = ()
    filter: Predicate | None = None
    join: Any = None

    def __post_init__(self) -> None:
        if self.out_of_universe not in ("drop", "error"):
            raise ValueError("out_of_universe must be 'drop' or 'error'")
        for name in ("max_units", "max_groups_per_unit", "max_rows_per_group"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1")
        if self.unit_weights and (len(self.unit_weights) != self.max_groups_per_unit
                                  or any(isinstance(w, bool) or not isinstance(w, int) or not 0 < w < 1 << 20
                                         for w in self.unit_weights)):
            raise ValueError("unit_weights: one int weight in [1, 2^20) per number of kept keys 1..k")
        if not self.key_columns or not self.aggregates:
            raise ValueError("a groups stage needs key columns and at least one aggregate")

    @property
    def value_columns(self) -> tuple[str, ...]:
        """The distinct value columns the aggregates read, in first-use order (public)."""
        return tuple(dict.fromkeys(a.column for a in self.aggregates if a.column is not None))

    @property
    def columns(self) -> list[str]:
        """Every input column the stage reads (the filter's too)."""
        extra = [self.unit_column] if self.unit_column else []
        used = self.filter.columns() if self.filter is not None else ()
        on = self.join.on if self.join is not None else ()
        return list(dict.fromkeys([*self.key_columns, *extra, *self.value_columns, *used, *on]))

    @property
    def input_columns(self) -> list[str]:
        """The columns read from the input (a join's own columns come from its table)."""
        added = set(self.join.added) if self.join is not None else set()
        return [c for c in self.columns if c not in added]

    def null_rule(self, column: str) -> Any:
        """The declared :class:`~dpspark.engine.numeric.NullRule` of a value column (default: drop)."""
        from dpspark.engine.numeric import NullRule

        return dict(self.nulls).get(column, NullRule())
