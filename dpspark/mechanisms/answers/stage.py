"""The stage an ``answers`` release declares: the exact totals of a batch of scalar statistics, in one pass.

Kernels: :func:`dpspark.mechanisms.answers.spark_kernel.totals_kernel` and
:func:`dpspark.mechanisms.answers.arrow_kernel.totals_kernel` (the same statistics, filters included). The
Arrow kernel computes per-row values in float64, so a batch with a clip bound x 2^scale_bits at or past
2^52 declares :class:`WideScalarTotalsStage`, which only Spark computes (exact decimals).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from dpspark.engine.stages import FamilyStage
# from queries, not from the kernel: choosing a stage (planning) then imports no pyarrow.compute (0.2-0.45 s)
from dpspark.mechanisms.answers.queries import MAX_ARROW_DELTA, Scalar


@dataclass(frozen=True, eq=False)
class ScalarTotalsStage(FamilyStage):
    """The exact integer statistic of every scalar (clipped per unit, filters applied), in one pass."""

    kernels: ClassVar[dict[str, str]] = {
        "spark": "dpspark.mechanisms.answers.spark_kernel:totals_kernel",
        "arrow": "dpspark.mechanisms.answers.arrow_kernel:totals_kernel",
    }

    scalars: tuple[Scalar, ...]
    unit_column: str | None
    max_units: int

    @staticmethod
    def type_for(scalars: Sequence[Scalar]) -> type["ScalarTotalsStage"]:
        """The stage type of a batch: wide when a clip bound x 2^scale_bits reaches the Arrow kernel's 2^52."""
        return WideScalarTotalsStage if any(s.delta >= MAX_ARROW_DELTA for s in scalars) else ScalarTotalsStage

    @staticmethod
    def of(scalars: Sequence[Scalar], unit_column: str | None, max_units: int) -> "ScalarTotalsStage":
        """The stage of a batch, of the type :meth:`type_for` picks."""
        return ScalarTotalsStage.type_for(scalars)(tuple(scalars), unit_column, max_units)


@dataclass(frozen=True, eq=False)
class WideScalarTotalsStage(ScalarTotalsStage):
    """A batch past the Arrow kernel's 2^52 range: Spark only."""

    kernels: ClassVar[dict[str, str]] = {"spark": "dpspark.mechanisms.answers.spark_kernel:totals_kernel"}

    def no_kernel(self, engine: str) -> Exception | None:
        """The Arrow kernel's own refusal of a too wide batch (before any data is read)."""
        from dpspark.mechanisms.answers.arrow_kernel import check_arrow
        from dpspark.mechanisms.answers.queries import QueryError

        try:
            check_arrow(self.scalars)
        except QueryError as err:
            return err
        return None
