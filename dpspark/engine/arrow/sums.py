"""The sums stage on one machine (:class:`~dpspark.engine.stages.SumsStage`), exactly as the Spark stage sums.

Values rounded half away from zero to integers (Spark's HALF_UP), NULL and NaN = 0, each clipped to the
column's bound; a unit's total per column clipped to [lo, hi]; batches H_key(unit) mod B with Spark's
xxhash64 of the id, the keyed splitmix (:mod:`dpspark.engine.keyed`) and a non-negative remainder. Spark
hashes the id as it types the column: a CSV read with ``inferSchema`` types an integral column IntegerType
when every value fits 32 bits (hashed as an int), where the Arrow reader says int64 - the count stage's
rule (:func:`dpspark.engine.arrow.counts._csv_ints_fit_int32`), applied here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.arrow.counts import _csv_ints_fit_int32, spark_hash
from dpspark.engine.arrow.inputs import scan_table
from dpspark.engine.keyed import keyed_mix
from dpspark.engine.stages import SumsStage

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend


def round_half_away(y: np.ndarray) -> np.ndarray:
    """round(y) half away from zero, exactly for finite y (y - trunc(y) is exact in double); +-inf stay."""
    with np.errstate(invalid="ignore"):  # y = +-inf: inf - inf is NaN, the test is False, the infinity stays
        r = np.trunc(y)
        return r + np.sign(y) * (np.abs(y - r) >= 0.5)  # report: the exact rounding of the preprocessed double


def fixed_values(values: "pa.Array | pa.ChunkedArray", scale_bits: int, bound: int) -> np.ndarray:
    """round(x 2^b) half away from zero, NULL and NaN = 0, clipped to [-bound, bound] (int64).

    Read by :func:`dpspark.engine.numeric.arrow_numeric` (a cast that cannot raise; +-inf clip to the bound),
    the twin of the Spark stage's :func:`dpspark.engine.spark.sums._row_value`.
    """
    from dpspark.engine.numeric import arrow_numeric

    x = arrow_numeric(values).fill_null(0.0).to_numpy()  # report: input preprocessing, as on Spark
    # clip to +-2^k >= bound before scaling (round is monotone and the final clip fixes the integer bound, so
    # this is the same map): x 2^b then cannot overflow, and no value raises numpy's overflow warning (whether
    # it appears would depend on the data: a side channel outside the DP output)
    lim = 2.0 ** (int(bound).bit_length() - scale_bits)  # report: a power of two >= bound / 2^b (exact)
    scaled = np.clip(x, -lim, lim) * float(1 << scale_bits)  # report
    return np.clip(round_half_away(scaled), -bound, bound).astype(np.int64)  # report


def batch_of(unit_values: "pa.Array | pa.ChunkedArray", secret: bytes, batches: int, name: str = "unit", *,
             int32_units: bool = False) -> np.ndarray:
    """H_key(unit) mod B for each (non-NULL) unit id, as Spark's ``with_batches`` computes it (int64).

    ``int32_units``: the ids are int64 here but Spark types them IntegerType (a CSV read with inferSchema
    whose integers all fit 32 bits; :func:`csv_int32_units`), so they are hashed as ints.
    """
    mixed = keyed_mix(spark_hash(unit_values, name, int32_units=int32_units), secret).view(np.int64)
    return np.mod(mixed, batches)


def csv_int32_units(backend: "ArrowBackend", unit: str | None) -> bool:
    """Whether Spark types the input's unit column IntegerType where Arrow reads int64 (CSV inferSchema)."""
    return unit is not None and bool(backend.csv_infer) and _csv_ints_fit_int32(backend.dataset, unit)


def arrow_sums(table: pa.Table, stage: SumsStage, secret: bytes | None, *,
               int32_units: bool = False) -> list[dict[str, int]]:
    """The stage's exact totals per batch, as the Spark kernel returns them, from an in-memory table.

    ``int32_units``: hash the unit ids as Spark's IntegerType (:func:`batch_of`).
    """
    cols = list(stage.columns)
    unit = stage.unit_column
    if unit is not None:
        table = table.filter(pc.is_valid(table.column(unit)))
    fixed = {c: fixed_values(table.column(c), stage.scale_bits, h) for c, h in zip(cols, stage.sensitivity())}
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
            batch = batch_of(ids.dictionary, secret, stage.batches, unit, int32_units=int32_units)
        else:
            batch = np.zeros(units, dtype=np.int64)
    nb = stage.batches or 1
    out = [{"batch": b, "units": int(np.count_nonzero(batch == b))} for b in range(nb)]
    for c, lo, hi in zip(cols, stage.lo, stage.hi):
        clipped = np.clip(per_unit[c], lo, hi)
        for b in range(nb):
            out[b][f"sum_{c}"] = int(clipped[batch == b].sum(dtype=object)) if len(clipped) else 0
    return out


def sums_of_table(backend: "ArrowBackend", table: pa.Table, stage: SumsStage) -> list[dict[str, int]]:
    """The sums stage over ``table`` (read from the input, or derived from it by a family kernel): one pass."""
    secret = backend.batch_secret() if stage.batches is not None else None
    int32 = stage.batches is not None and csv_int32_units(backend, stage.unit_column)
    backend.progress(f"pass {backend.passes_run + 1}: clipped column sums on Arrow")
    out = arrow_sums(table, stage, secret, int32_units=int32)
    backend.pass_done()
    return out


def sums_kernel(backend: "ArrowBackend", stage: SumsStage) -> list[dict[str, int]]:
    """Per batch (ascending; one entry without batches): {"batch", "units", "sum_<col>"...} as exact ints."""
    return sums_of_table(backend, scan_table(backend.dataset, stage.input_columns), stage)
