"""Declarative aggregates a mechanism asks the engine for; backends (Spark, Arrow) compute them.

A stage names what to aggregate with explicit public parameters only (never a config object), so the
same description runs on every backend and can be shown before any data is read.

The generic stages (:class:`CountsStage`, :class:`SumsStage`, :class:`OuterProductStage`) have kernels in
``engine/spark/`` and ``engine/arrow/``. A family that needs more declares its own stage class, a
:class:`FamilyStage` in its folder naming its kernels per engine as "module:function" strings; the backend
finds the kernel from the stage's type, so the engine imports no family.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from dpspark.universe import Universe


class FamilyStage:
    """Base of a stage a family declares: ``kernels`` maps an engine ("spark", "arrow") to "module:function".

    The function is called as ``function(backend, stage)`` by that engine's backend and imported only then.
    An engine missing from the mapping cannot run the stage: a mechanism declaring it runs elsewhere only.
    """

    kernels: ClassVar[Mapping[str, str]] = {}

    def no_kernel(self, engine: str) -> Exception | None:
        """The refusal when ``engine`` has no kernel for this stage (None: the engine's generic words)."""
        return None


@dataclass(frozen=True)
class CountsStage:
    """Exact count per universe index, after contribution bounding.

    * ``unit_column``: the privacy unit (None: every row is a unit);
    * ``max_keys_per_unit`` (k): a unit keeps at most k of its distinct in-universe keys, those with the
      smallest keyed hash of (unit, index) - a stable choice that depends on the unit's own rows only;
    * ``max_rows_per_key`` (c): a unit adds min(rows, c) to a key's count;
    * ``max_units`` (n) and ``on_excess_units``: "truncate" keeps the n units with the smallest keyed hash
      of the unit id (rows: the first n rows in keyed-hash order of their index), "refuse" fails the job
      before any noise when there are more than n (a curator-side check).
    """

    key_columns: tuple[str, ...]
    universe: "Universe"
    unit_column: str | None
    out_of_universe: str
    max_units: int
    max_keys_per_unit: int = 1
    max_rows_per_key: int = 1
    on_excess_units: str = "truncate"

    @classmethod
    def from_spec(cls, spec: Any) -> "CountsStage":
        """The count stage of a histogram release spec (a :class:`~dpspark.engine.spec.ReleaseSpec`)."""
        return cls(
            key_columns=tuple(spec.key_columns), universe=spec.universe, unit_column=spec.unit_column,
            out_of_universe=spec.out_of_universe, max_units=spec.max_units,
            max_keys_per_unit=spec.max_keys_per_unit, max_rows_per_key=spec.max_rows_per_key,
            on_excess_units=spec.on_excess_units,
        )

    @property
    def columns(self) -> list[str]:
        """Every input column the stage reads."""
        return list(self.key_columns) + ([self.unit_column] if self.unit_column else [])


#: the largest exact integer a decimal(38,0) sum holds
DECIMAL38_MAX = 10**38 - 1


@dataclass(frozen=True)
class SumsStage:
    """Exact sums of clipped fixed-point columns per unit, summed over units, optionally per disjoint batch.

    * each value x becomes the integer round(x * 2^scale_bits) (inputs are data, not noise; what follows is exact);
    * a unit's values are summed per column over its rows, then clipped to [lo_j, hi_j] (integers), so one
      unit moves column j's total by at most max(|lo_j|, |hi_j|) - the sensitivity is exact;
    * ``batches = B``: unit u belongs to batch H_key(u) mod B, a keyed hash of the unit id alone under a key
      drawn fresh per release (never written). Adding or removing a unit moves no other unit, under every
      neighbour relation, and a record's content never decides its batch;
    * totals are summed as decimal(38,0) in Spark (exact, associative); :meth:`check_capacity` refuses,
      before any data is read, a stage whose largest possible total could exceed it.

    The result holds, per batch (or once), the number of units and the clipped sum of each column.
    """

    columns: tuple[str, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    scale_bits: int
    unit_column: str | None
    max_units: int
    batches: int | None = None

    def __post_init__(self) -> None:
        if not (len(self.columns) == len(self.lo) == len(self.hi)) or not self.columns:
            raise ValueError("a sums stage needs one [lo, hi] per column")
        if any(lo > hi for lo, hi in zip(self.lo, self.hi)):
            raise ValueError("every clip range needs lo <= hi")
        if not 0 <= self.scale_bits <= 64:
            raise ValueError("scale_bits must lie in [0, 64]")
        if self.batches is not None and not 1 <= self.batches <= 1 << 20:
            raise ValueError("batches must lie in [1, 2^20]")
        self.check_capacity()

    def sensitivity(self) -> tuple[int, ...]:
        """Per column, the most one unit moves the total: max(|lo|, |hi|) in fixed-point units."""
        return tuple(max(abs(lo), abs(hi)) for lo, hi in zip(self.lo, self.hi))

    def check_capacity(self) -> None:
        """n units at the clip bounds cannot overflow a decimal(38,0) total (data-free)."""
        if self.max_units * max(self.sensitivity()) > DECIMAL38_MAX:
            raise ValueError("max_units x the clip bound exceeds decimal(38,0): lower the scale or the clip range")

    @property
    def input_columns(self) -> list[str]:
        """Every input column the stage reads."""
        return list(self.columns) + ([self.unit_column] if self.unit_column else [])


@dataclass(frozen=True)
class OuterProductStage:
    """Exact sums of outer products x x^T of fixed-point row vectors that pass an exact norm test.

    * each row's vector is x = round(v * 2^scale_bits) over ``columns`` (integers; NULL counts as 0), then, if
      ``matrix`` is given, y = A x with the public integer matrix A (a preconditioner quantised to fixed point
      *before* it enters the pass, so the norm test below is exact);
    * the norm test keeps a row iff ||y||_2^2 <= ``norm_bound_sq`` (an integer, in the same fixed-point units),
      decided on exact decimal(38,0) integers - a float never decides membership;
    * the result is the number of kept rows and the upper triangle of sum_rows y y^T, all exact integers,
      optionally per disjoint batch of ``unit_column`` ids (as :class:`SumsStage`; each unit one row).
    """

    columns: tuple[str, ...]
    scale_bits: int
    norm_bound_sq: int
    matrix: tuple[tuple[int, ...], ...] | None = None
    batches: int | None = None
    #: the unit id column batches hash (a row's position would move when a row is inserted)
    unit_column: str | None = None

    def __post_init__(self) -> None:
        d = len(self.columns)
        if self.batches is not None and self.unit_column is None:
            raise ValueError("batches need a unit id column: a row's position is not a stable batch key")
        if d < 1:
            raise ValueError("an outer-product stage needs at least one column")
        if not 0 <= self.scale_bits <= 30:
            raise ValueError("scale_bits must lie in [0, 30] (values are stored as int32-range integers)")
        if self.norm_bound_sq < 0:
            raise ValueError("norm_bound_sq must be >= 0")
        if self.matrix is not None and any(len(row) != d for row in self.matrix):
            raise ValueError("the matrix needs one row of len(columns) integers per output coordinate")
        # every kept row has |y_i| <= sqrt(norm_bound_sq), so |y_i y_j| <= norm_bound_sq; rows of 2^40 at most
        if self.norm_bound_sq * (1 << 40) > DECIMAL38_MAX:
            raise ValueError("norm_bound_sq is too large for exact decimal(38,0) sums over 2^40 rows")

    @property
    def dimension(self) -> int:
        """The length of y (rows of the matrix, or the number of columns)."""
        return len(self.matrix) if self.matrix is not None else len(self.columns)

    def pairs(self) -> list[tuple[int, int]]:
        """The upper-triangle index pairs (i <= j), in the order of the result's ``sum_i_j`` columns."""
        d = self.dimension
        return [(i, j) for i in range(d) for j in range(i, d)]
