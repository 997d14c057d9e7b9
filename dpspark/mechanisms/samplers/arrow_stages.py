"""Arrow kernels of the samplers' stages (:mod:`dpspark.mechanisms.samplers.stages`): a derived table, then the
engine's own sums or count stage over it (the same pass counter and batch key)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.mechanisms.samplers.stages import BATCH, BatchedCountsStage, BinarySumsStage

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend


def binary_sums(backend: "ArrowBackend", stage: BinarySumsStage) -> list[dict[str, int]]:
    """The sums over the bit (or element) columns, mapped from the input as on Spark."""
    from dpspark.engine.arrow.inputs import scan_table
    from dpspark.engine.arrow.sums import sums_of_table

    sums = stage.sums
    unit = [sums.unit_column] if sums.unit_column is not None else []
    if stage.array is None:
        table = scan_table(backend.dataset, sums.input_columns)
    else:
        from dpspark.mechanisms.samplers.binary_input import expand_array

        raw = scan_table(backend.dataset, [stage.array] + unit)
        elems = expand_array(raw.column(stage.array), stage.array, len(sums.columns))
        table = pa.table(dict(zip(sums.columns, elems)) | {c: raw.column(c) for c in unit})
    if stage.nulls is not None:
        from dpspark.mechanisms.samplers.binary_input import binary_bits

        table = pa.table({c: pa.array(binary_bits(table.column(c), stage.nulls).astype(np.int64)) for c in sums.columns}
                         | {c: table.column(c) for c in unit})
    return sums_of_table(backend, table, sums)


def batched_counts(backend: "ArrowBackend", stage: BatchedCountsStage) -> list[tuple[list[int], list[int]]]:
    """The joint (batch, key) count stage over the input with BATCH = H_key(unit) mod B, split per batch."""
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.counts import counts_on
    from dpspark.engine.arrow.inputs import scan_table
    from dpspark.engine.arrow.sums import batch_of

    if stage.batches == 1:
        return [backend.compute(stage.counts)]
    secret = backend.batch_secret()
    unit = stage.counts.unit_column
    table = scan_table(backend.dataset, stage.counts.columns)
    table = table.filter(pc.is_valid(table.column(unit)))
    batch = batch_of(table.column(unit), secret, stage.batches, unit)
    joint = ds.dataset(table.append_column(BATCH, pa.array(batch, pa.int64())))
    return stage.split(*counts_on(backend, joint, stage.joint()))
