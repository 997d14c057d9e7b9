"""The stages the samplers declare: binary column sums and counts per disjoint batch, on either engine.

* :class:`BinarySumsStage` - a :class:`~dpspark.engine.stages.SumsStage` over binary columns or the elements
  of one array column (the ``[columns] array`` form): each value becomes its bit first (1 iff non-zero,
  +-inf included; NULL, NaN and unparseable text count ``nulls``), by the same infallible map on both engines
  (:func:`dpspark.mechanisms.samplers.binary_input.binary_bits`,
  :func:`dpspark.mechanisms.samplers.spark_arrays.spark_bit`); ``nulls`` None: the sums stage's own value
  rule over the elements (rounded numbers, NULL = 0).
* :class:`BatchedCountsStage` - counts per disjoint batch H_key(unit) mod m in one pass: the batch is a keyed
  hash of the unit id alone (never of record content, so a changed record stays in its batch) and becomes the
  most significant key column of the engine's ordinary count stage.

The batch key is the backend's batch secret (drawn once per release from its generator, never written). On
Arrow the batch of a unit is the same function as on Spark: Spark's xxhash64 of the id, the keyed splitmix,
then a non-negative remainder mod B. Kernels: :mod:`~dpspark.mechanisms.samplers.spark_stages` and
:mod:`~dpspark.mechanisms.samplers.arrow_stages`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from dpspark.engine.stages import CountsStage, FamilyStage, SumsStage

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend

#: the column a batched stage adds to the input (the same name as the engine's sums batches)
BATCH = "__dp_batch"


@dataclass(frozen=True)
class BinarySumsStage(FamilyStage):
    """``sums`` over the bits of its columns (``array`` None) or of the elements of ``array`` (named ``sums.columns``)."""

    kernels: ClassVar[dict[str, str]] = {
        "spark": "dpspark.mechanisms.samplers.spark_stages:binary_sums",
        "arrow": "dpspark.mechanisms.samplers.arrow_stages:binary_sums",
    }

    sums: SumsStage
    array: str | None = None
    nulls: int | None = 0


@dataclass(frozen=True)
class BatchedCountsStage(FamilyStage):
    """``counts`` on each of ``batches`` disjoint batches H_key(unit) mod B, in ONE pass (one batch: the stage)."""

    kernels: ClassVar[dict[str, str]] = {
        "spark": "dpspark.mechanisms.samplers.spark_stages:batched_counts",
        "arrow": "dpspark.mechanisms.samplers.arrow_stages:batched_counts",
    }

    counts: CountsStage
    batches: int

    def __post_init__(self) -> None:
        if self.batches > 1 and self.counts.unit_column is None:
            raise ValueError("several samples need a unit id column (a row's position is not a stable batch key)")

    def joint(self) -> CountsStage:
        """The count stage over (batch, key): the universe [0, B) x X, batch most significant (index b |X| + x)."""
        return batched_stage(self.counts, self.batches)

    def split(self, indices: list[int], counts: list[int]) -> list[tuple[list[int], list[int]]]:
        """The joint stage's (indexes, counts) as one (indexes, counts) per batch, each ascending."""
        k = self.counts.universe.size
        out: list[tuple[list[int], list[int]]] = [([], []) for _ in range(self.batches)]
        for i, c in zip(indices, counts):  # ascending (batch, key) order: each batch's indexes stay ascending
            b, x = divmod(i, k)
            out[b][0].append(x)
            out[b][1].append(c)
        return out


def batched_stage(stage: CountsStage, batches: int) -> CountsStage:
    """The count stage over (batch, key): the universe [0, B) x X, batch most significant (index b |X| + x)."""
    from dpspark.universe.int_range import IntRangeUniverse
    from dpspark.universe.product import TupleUniverse

    universe = TupleUniverse((IntRangeUniverse(0, batches - 1, column=BATCH), *stage.universe.parts))
    return replace(stage, key_columns=(BATCH, *stage.key_columns), universe=universe)


def column_sums(backend: "Backend", stage: SumsStage, array: str | None = None,
                nulls: int | None = 0) -> list[dict[str, int]]:
    """Per batch: {"batch", "units", "sum_<col>"...} exact ints, on the backend's engine (module docstring)."""
    if array is None and nulls is None:
        return backend.compute(stage)
    return backend.compute(BinarySumsStage(stage, array, nulls))


def batched_counts(backend: "Backend", stage: CountsStage, batches: int) -> list[tuple[list[int], list[int]]]:
    """The count stage on each disjoint batch H_key(unit) mod ``batches``, in ONE pass (one batch: the stage)."""
    return backend.compute(BatchedCountsStage(stage, batches))
