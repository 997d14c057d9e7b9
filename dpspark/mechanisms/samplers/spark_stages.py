"""Spark kernels of the samplers' stages (:mod:`dpspark.mechanisms.samplers.stages`): a derived frame, then the
engine's own sums or count stage over it (the same pass counter and batch key)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpspark.mechanisms.samplers.stages import BatchedCountsStage, BinarySumsStage

if TYPE_CHECKING:
    from dpspark.engine.spark.backend import SparkBackend


def binary_sums(backend: "SparkBackend", stage: BinarySumsStage) -> list[dict[str, int]]:
    """The sums over the bit (or element) columns derived from the input by infallible casts."""
    from dpspark.engine.spark.sums import sums_on
    from dpspark.mechanisms.samplers.spark_arrays import with_bits, with_elements

    sums = stage.sums
    unit = [sums.unit_column] if sums.unit_column is not None else []
    if stage.nulls is None:
        frame = with_elements(backend.frame, stage.array, len(sums.columns), sums.columns, unit)
    else:
        frame = with_bits(backend.frame, sums.columns, unit, stage.nulls, stage.array)
    return sums_on(backend, frame, sums)


def batched_counts(backend: "SparkBackend", stage: BatchedCountsStage) -> list[tuple[list[int], list[int]]]:
    """The joint (batch, key) count stage over the input with BATCH = H_key(unit) mod B, split per batch."""
    from dpspark.engine.spark.counts import counts_on
    from dpspark.engine.spark.sums import with_batches

    if stage.batches == 1:
        return [backend.compute(stage.counts)]
    secret = backend.batch_secret()
    frame = with_batches(backend.frame, stage.counts.unit_column, stage.batches, secret)
    return stage.split(*counts_on(backend, frame, stage.joint()))
