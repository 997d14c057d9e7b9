"""The stage the product mechanisms declare: the units prepared once, then one pass per round.

``Backend.compute(ProductRoundsStage(...))`` returns the aggregate oracle of
:mod:`dpspark.mechanisms.product.rounds` (call it with a :class:`~dpspark.mechanisms.product.rounds.RoundQuery`;
``close()`` releases the prepared units). Kernels: Spark (:func:`dpspark.mechanisms.product.spark_rounds.open_rounds`)
and Arrow (:func:`dpspark.mechanisms.product.arrow_rounds.open_rounds`), with identical sums for the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dpspark.engine.stages import FamilyStage


@dataclass(frozen=True)
class ProductRoundsStage(FamilyStage):
    """One record per unit (the OR of its rows' bits) in keyed-hash batches; the rounds' truncated sums."""

    kernels: ClassVar[dict[str, str]] = {"spark": "dpspark.mechanisms.product.spark_rounds:open_rounds",
                                         "arrow": "dpspark.mechanisms.product.arrow_rounds:open_rounds"}

    columns: tuple[str, ...]
    unit_column: str
    batches: int
    array: str | None = None
    nulls: int = 0
