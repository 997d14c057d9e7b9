"""The passes the samplers make, on either engine: clipped column sums (Arrow side here) and per-batch counts.

* :func:`column_sums` - a :class:`~dpspark.engine.stages.SumsStage` on Spark (``ctx.sums``) or on Arrow
  (:func:`arrow_sums`, the same definition: values rounded half away from zero to integers, NULL = 0, a
  unit's total per column clipped to [lo, hi], batches H_key(unit) mod B); also over the elements of one
  array column (the ``[columns] array`` form). Binary columns (the bernoulli sampler) are first mapped to
  their 0/1 bits with the declared ``nulls`` value, by the same infallible map on both engines.
* :func:`batched_counts` - counts per disjoint batch H_key(unit) mod m in one pass: the batch is a keyed hash
  of the unit id alone (never of record content, so a changed record stays in its batch) and becomes the most
  significant key column of the engine's ordinary count stage.

The batch key is drawn once per release from the release's generator (Spark: ``SparkContext.batch_secret``)
and never written. On Arrow the batch of a unit is the same function as on Spark: Spark's xxhash64 of the id,
the keyed splitmix, then a non-negative remainder mod B.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.stages import CountsStage, SumsStage

if TYPE_CHECKING:
    from dpspark.rng import RandomSource


def batch_secret(ctx: Any) -> bytes:
    """The release's batch key (drawn once from the context's generator on first use)."""
    own = getattr(ctx, "batch_secret", None)
    if callable(own):
        return own()
    secret = getattr(ctx, "_sampler_batch_secret", None)
    if secret is None:
        secret = ctx.rng.bits(128).to_bytes(16, "big")
        ctx._sampler_batch_secret = secret
    return secret


def batch_of(unit_values: "pa.Array | pa.ChunkedArray", secret: bytes, batches: int, name: str = "unit") -> np.ndarray:
    """H_key(unit) mod B for each (non-NULL) unit id, as Spark's ``with_batches`` computes it (int64)."""
    from dpspark.engine.arrow.backend import keyed_mix, spark_hash

    mixed = keyed_mix(spark_hash(unit_values, name), secret).view(np.int64)
    return np.mod(mixed, batches)


def _fixed(values: "pa.ChunkedArray", scale_bits: int, bound: int) -> np.ndarray:
    """round(x 2^b) half away from zero (Spark's HALF_UP), NULL and NaN = 0, clipped to [-bound, bound] (int64).

    Read by :func:`dpspark.engine.numeric.arrow_numeric` (a cast that cannot raise; +-inf clip to the bound),
    the twin of the Spark stage's :func:`dpspark.engine.spark.sums._row_value`.
    """
    from dpspark.engine.numeric import arrow_numeric

    x = arrow_numeric(values).fill_null(0.0).to_numpy()  # report: input preprocessing, as on Spark
    scaled = x * float(1 << scale_bits)  # report
    r = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)  # report
    return np.clip(r, -bound, bound).astype(np.int64)


def arrow_sums(table: pa.Table, stage: SumsStage, secret: bytes | None) -> list[dict[str, int]]:
    """The stage's exact totals per batch, as ``SparkContext.sums`` returns them, from an in-memory table."""
    cols = list(stage.columns)
    unit = stage.unit_column
    if unit is not None:
        table = table.filter(pc.is_valid(table.column(unit)))
    fixed = {c: _fixed(table.column(c), stage.scale_bits, h) for c, h in zip(cols, stage.sensitivity())}
    if unit is None:
        per_unit = fixed
        batch = np.zeros(table.num_rows, dtype=np.int64)
        if stage.batches is not None:
            raise ValueError("batches need a unit column and the release's batch key")
    else:
        ids = pc.dictionary_encode(table.column(unit).combine_chunks())
        codes = ids.indices.to_numpy(zero_copy_only=False)
        units = len(ids.dictionary)
        per_unit = {}
        for c in cols:  # exact int64 sums per unit (np.add.at keeps integers)
            acc = np.zeros(units, dtype=np.int64)
            np.add.at(acc, codes, fixed[c])
            per_unit[c] = acc
        if stage.batches is not None:
            if secret is None:
                raise ValueError("batches need the release's batch key")
            batch = batch_of(ids.dictionary, secret, stage.batches, unit)
        else:
            batch = np.zeros(units, dtype=np.int64)
    nb = stage.batches or 1
    out = [{"batch": b, "units": int(np.count_nonzero(batch == b))} for b in range(nb)]
    for c, lo, hi in zip(cols, stage.lo, stage.hi):
        clipped = np.clip(per_unit[c], lo, hi)
        for b in range(nb):
            out[b][f"sum_{c}"] = int(clipped[batch == b].sum(dtype=object)) if len(clipped) else 0
    return out


def column_sums(ctx: Any, stage: SumsStage, array: str | None = None, nulls: int | None = 0) -> list[dict[str, int]]:
    """Per batch: {"batch", "units", "sum_<col>"...} exact ints, on the context's engine.

    ``array``: the stage's columns are elements 0..d-1 of this array column (NULL when missing), made on
    either engine before the same sums (:mod:`dpspark.mechanisms.samplers.binary_input`).
    ``nulls`` (0 or 1): the columns are binary - each value becomes its bit first (1 iff non-zero, +-inf
    included; NULL, NaN and unparseable text count ``nulls``), by casts that cannot raise on data, the same
    map on both engines (:func:`dpspark.mechanisms.samplers.binary_input.binary_bits`,
    :func:`dpspark.mechanisms.samplers.spark_arrays.spark_bit`). None: the stage's own value rule (rounded numbers, NULL = 0).
    """
    unit = [stage.unit_column] if stage.unit_column is not None else []
    if hasattr(ctx, "sums"):
        if array is None and nulls is None:
            return ctx.sums(stage)
        df = ctx.df
        if nulls is None:
            from dpspark.mechanisms.samplers.spark_arrays import with_elements

            ctx.df = with_elements(df, array, len(stage.columns), stage.columns, unit)
        else:
            from dpspark.mechanisms.samplers.spark_arrays import with_bits

            ctx.df = with_bits(df, stage.columns, unit, nulls, array)
        try:  # the context's own sums (its batch key and pass count), over the element / bit columns
            return ctx.sums(stage)
        finally:
            ctx.df = df
    if array is None:
        from dpspark.engine.arrow.backend import scan_table

        table = scan_table(ctx.dataset, stage.input_columns)
    else:
        from dpspark.engine.arrow.backend import scan_table
        from dpspark.mechanisms.samplers.binary_input import expand_array

        raw = scan_table(ctx.dataset, [array] + unit)
        elems = expand_array(raw.column(array), array, len(stage.columns))
        table = pa.table(dict(zip(stage.columns, elems)) | {c: raw.column(c) for c in unit})
    if nulls is not None:
        from dpspark.mechanisms.samplers.binary_input import binary_bits

        table = pa.table({c: pa.array(binary_bits(table.column(c), nulls).astype(np.int64)) for c in stage.columns}
                         | {c: table.column(c) for c in unit})
    secret = batch_secret(ctx) if stage.batches is not None else None
    ctx.progress("pass 1: clipped column sums on Arrow")
    out = arrow_sums(table, stage, secret)
    ctx.passes_run += 1
    ctx.last_pass_end = time.monotonic()
    return out


def batched_stage(stage: CountsStage, batches: int) -> CountsStage:
    """The count stage over (batch, key): the universe [0, B) x X, batch most significant (index b |X| + x)."""
    from dataclasses import replace

    from dpspark.engine.spark.sums import BATCH
    from dpspark.universe.int_range import IntRangeUniverse
    from dpspark.universe.product import TupleUniverse

    universe = TupleUniverse((IntRangeUniverse(0, batches - 1, column=BATCH), *stage.universe.parts))
    return replace(stage, key_columns=(BATCH, *stage.key_columns), universe=universe)


def batched_counts(ctx: Any, stage: CountsStage, batches: int, rng: "RandomSource") -> list[tuple[list[int], list[int]]]:
    """The count stage on each disjoint batch H_key(unit) mod ``batches``, in ONE pass (one batch: the stage).

    The input gets a column BATCH = H_key(unit id) mod B (:func:`batch_of`; Spark: ``with_batches``) and the
    ordinary count stage runs over the key (BATCH, key) in the universe [0, B) x X. The batch is a function
    of the unit id alone, so a unit still has one key, and contribution bounding and the max_units rule apply
    to the whole input exactly as without batches.
    """
    if batches == 1:
        return [ctx.counts(stage)]
    if stage.unit_column is None:
        raise ValueError("several samples need a unit id column (a row's position is not a stable batch key)")
    from dpspark.engine.spark.sums import BATCH

    secret = batch_secret(ctx)
    joint = batched_stage(stage, batches)
    if hasattr(ctx, "df"):  # Spark
        from dpspark.engine.backend import SparkContext
        from dpspark.engine.spark.sums import with_batches

        sub: Any = SparkContext(with_batches(ctx.df, stage.unit_column, batches, secret), rng, ctx.progress)
    else:
        from dpspark.engine.arrow.backend import ArrowContext, scan_table

        table = scan_table(ctx.dataset, stage.columns)
        table = table.filter(pc.is_valid(table.column(stage.unit_column)))
        batch = batch_of(table.column(stage.unit_column), secret, batches, stage.unit_column)
        sub = ArrowContext(table.append_column(BATCH, pa.array(batch, pa.int64())), rng, ctx.progress)
    indices, counts = sub.counts(joint)
    ctx.passes_run += 1
    ctx.last_pass_end = time.monotonic()
    k = stage.universe.size
    out: list[tuple[list[int], list[int]]] = [([], []) for _ in range(batches)]
    for i, c in zip(indices, counts):  # ascending (batch, key) order: each batch's indexes stay ascending
        b, x = divmod(i, k)
        out[b][0].append(x)
        out[b][1].append(c)
    return out
