"""The stage the Gaussian learners declare: pairs and singles prepared once, then the learner's passes.

``Backend.compute(GaussianPairsStage(...))`` returns a :class:`~dpspark.mechanisms.gaussian_model.source.GaussianSource`
(``close()`` releases the prepared frames). Kernels: Spark
(:func:`dpspark.mechanisms.gaussian_model.spark_pairs.open_pairs`) and Arrow
(:func:`dpspark.mechanisms.gaussian_model.arrow_pairs.open_pairs`, on
:class:`~dpspark.mechanisms.gaussian_model.source.ArraySource`), with identical aggregates for the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from dpspark.engine.stages import FamilyStage


@dataclass(frozen=True)
class GaussianPairsStage(FamilyStage):
    """Units in keyed-hash buckets (pairs: buckets of two rows; singles) over the fixed-point columns."""

    kernels: ClassVar[dict[str, str]] = {"spark": "dpspark.mechanisms.gaussian_model.spark_pairs:open_pairs",
                                         "arrow": "dpspark.mechanisms.gaussian_model.arrow_pairs:open_pairs"}

    columns: tuple[str, ...]
    unit_column: str
    data_bits: int
    buckets: int
    max_terms: int
    nulls: Any = None
