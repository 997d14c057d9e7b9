"""Look a DataFrame of keys up in a compact release, on Spark (DataFrame API only; Spark Connect too).

Keys are encoded with the job's own Spark SQL universe encoder
(:func:`dpspark.engine.spark.encode.with_universe_index`); each Arrow batch is then
evaluated in ``mapInArrow`` with the vectorized path of the lookup library
(Horner per block of keys, multipoint evaluation for large batches) and G.
The workers get the coefficients and G's exact parameters inside the
function's closure (Spark ships large closures as a broadcast), taken from a
release the driver has opened and verified, so they need no shared
filesystem and evaluate exactly the verified bytes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from dpspark.engine.spark.encode import with_universe_index

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.mechanisms.compact.reader import CompactReleaseLookup


def _batch_counter(m: int, coefficients: np.ndarray, sampler_section: dict[str, Any], counting: dict[str, Any],
                   index_col: str, count_col: str, width: int) -> Any:
    """The mapInArrow function: noisy counts of the index words in ``index_col`` (null stays null)."""

    def count_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:  # runs in Python workers
        from dpspark.mechanisms.compact.decode import CountDecoder
        from dpspark.mechanisms.compact.evaluation import evaluate_points
        from dpspark.mechanisms.compact.parameters import make_sampler
        from dpspark.mechanisms.compact.rebuild import rebuild_mechanism
        from dpspark.gf import GF2m
        from dpspark.mechanisms.compact.reader import points_of_index_words

        field = GF2m(m)
        mech = rebuild_mechanism(counting)
        decoder = CountDecoder(make_sampler(mech, m, sampler_section["kind"]))
        for batch in batches:
            words = batch.column(index_col)
            valid = words.is_valid().to_numpy(zero_copy_only=False)
            out = np.zeros(len(words), dtype=np.int64)
            if valid.any():
                present = words.filter(pa.array(valid)).cast(pa.binary(width))
                points = points_of_index_words(field, present)
                unique, inverse = np.unique(points, axis=0, return_inverse=True)
                values = evaluate_points(field, coefficients, np.ascontiguousarray(unique))
                out[valid] = decoder.counts_of_elements(field, values)[inverse.reshape(-1)]
            counts = pa.array(out, type=pa.int64(), mask=~valid)
            keep = [name for name in batch.schema.names if name != index_col]
            yield pa.RecordBatch.from_arrays([batch.column(n) for n in keep] + [counts], names=keep + [count_col])

    return count_batches


def lookup_dataframe(
    df: "DataFrame",
    release: "CompactReleaseLookup",
    key_columns: Sequence[str] | None = None,
    *,
    count_col: str = "noisy_count",
) -> "DataFrame":
    """``df`` plus ``count_col`` (long): each row's noisy count in the compact ``release``.

    ``key_columns`` name the key columns in the universe's component order
    (default: the release's key column names). Rows whose key is null or
    outside the universe get a null count. Row order is not preserved.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    if getattr(release, "manifest", None) is None or release.manifest.kind != "compact":
        raise ValueError("lookup_dataframe needs an opened compact release (dpspark.lookup.open_release)")
    if not release.verified:
        raise ValueError("verify the release first (open_release(path) or release.verify())")
    cols = list(key_columns) if key_columns is not None else list(release.manifest.key_columns)
    if count_col in df.columns:
        raise ValueError(f"the DataFrame already has a column {count_col!r}")
    tag = uuid.uuid4().hex[:8]
    index_col, member_col = f"__dpl_{tag}_index", f"__dpl_{tag}_in"
    encoded = with_universe_index(df, release.universe, cols, index_col=index_col, in_universe_col=member_col)
    encoded = encoded.withColumn(index_col, F.when(F.col(member_col), F.col(index_col))).drop(member_col)
    info = release.info
    counting = dict(info.counting)
    counting = {
        "mechanism": counting["mechanism"],
        "n": int(counting["n"], 0),
        "exp_eps": {k: int(v, 0) for k, v in counting["exp_eps"].items()},
        "gamma": None if counting["gamma"] is None else {k: int(v, 0) for k, v in counting["gamma"].items()},
        "t": None if counting["t"] is None else int(counting["t"]),
        "d": counting["d"],
    }
    fn = _batch_counter(info.m, release.coefficients.copy(), dict(info.sampler), counting, index_col, count_col,
                        release.universe.index_width)
    schema = StructType(list(df.schema.fields) + [StructField(count_col, LongType(), True)])
    return encoded.mapInArrow(fn, schema)
