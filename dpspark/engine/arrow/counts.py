"""The count stage on one machine with pyarrow (Acero streaming group-by), exactly as the Spark stage counts.

The kernel returns exactly the same (indexes, counts) as :mod:`dpspark.engine.spark.counts` for the same
input and the same seeded generator, so a mechanism cannot tell the backends apart:

* the generator is read at the same points (one 128-bit contribution-bounding secret when a unit column
  is set, drawn before any data is read; the row-level truncation key in ``finish_counts``);
* the keyed pick is the same function: Spark's ``xxhash64(unit, index)`` (reimplemented in
  :mod:`dpspark.engine.xxhash64`, checked against Spark by the tests), then the same keyed splitmix
  (:mod:`dpspark.engine.keyed`);
* truncation keeps the n units with the smallest (keyed hash, unit hash) in signed 64-bit order, the
  k-keys pick orders by (keyed hash, index word), a unit adds min(rows, c) to a key's count;
* rows with a NULL key or unit are dropped; out-of-universe keys are dropped or fail the stage after
  truncation, as on Spark.

Memory: the input is scanned in record batches by an Acero plan (scan -> filter -> hash aggregate), so
only the distinct groups ((key) rows, or (key, unit) pairs with a unit column) are held, never the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.arrow.inputs import read_error_text, scan_table
from dpspark.engine.driver_counts import finish_counts
from dpspark.engine.errors import CuratorError, InputError
from dpspark.engine.keyed import distinct_keys_keep_indexes, keyed_mix
from dpspark.engine.stages import CountsStage
from dpspark.engine.xxhash64 import SPARK_SEED, hash_bytes, hash_fixed, hash_int, hash_long

if TYPE_CHECKING:
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.backend import ArrowBackend
    from dpspark.rng import RandomSource
    from dpspark.universe import Universe

ROWS = "__dp_rows"
UNIT_ID = "__dp_unit_id"
INDEX = "__dp_index"


def counts_on(backend: "ArrowBackend", dataset: "ds.Dataset", stage: CountsStage,
              csv_infer: bool = False) -> tuple[list[int], list[int]]:
    """The count stage over ``dataset`` (the input, or a table a family kernel derived from it): one pass."""
    backend.progress("reading input and counting keys on Arrow")
    indices, counts = arrow_counts(dataset, stage, backend.rng, csv_infer=csv_infer)
    backend.pass_done()
    backend.progress("counts collected on the driver")
    return finish_counts(indices, counts, stage, backend.rng)


def counts_kernel(backend: "ArrowBackend", stage: CountsStage) -> tuple[list[int], list[int]]:
    """(0-based indexes ascending, exact counts) of the non-zero bins, as the Spark backend computes them."""
    return counts_on(backend, backend.dataset, stage, backend.csv_infer)


def arrow_counts(dataset: "ds.Dataset", stage: CountsStage, rng: "RandomSource", *,
                 csv_infer: bool = False) -> tuple[list[int], list[int]]:
    """(0-based indexes, counts) of the count stage, in no particular order, before ``finish_counts``."""
    names = set(dataset.schema.names)
    missing = [c for c in stage.columns if c not in names]
    if missing:
        raise InputError(f"input has no column(s) {', '.join(map(repr, missing))}; "
                         f"it has {', '.join(map(repr, sorted(names)))}")
    cols = list(stage.key_columns)
    unit = stage.unit_column
    secret = rng.bits(128).to_bytes(16, "big") if unit is not None else b""  # same draw, same point as Spark
    grouped = _group_count(dataset, cols + ([unit] if unit else []))
    if unit is None:
        index, member, keep = _encode(grouped, stage.universe, cols, stage.out_of_universe)
        counts = grouped.column(ROWS).filter(keep)
        per_index = pa.table({INDEX: index.filter(keep), ROWS: counts}).group_by(INDEX).aggregate([(ROWS, "sum")])
        return _to_python(per_index.column(INDEX), per_index.column(ROWS + "_sum"))
    int32_units = csv_infer and _csv_ints_fit_int32(dataset, unit)
    # Each distinct unit once: its id (a dictionary index) and Spark's xxhash64(unit), which is both the
    # truncation's UNIT_HASH and the seed of the chained xxhash64(unit, index) of the pick.
    encoded_units = pc.dictionary_encode(_one_chunk(grouped.column(unit)))
    ids = encoded_units.indices
    unit_hash = spark_hash(encoded_units.dictionary, unit, int32_units=int32_units)
    grouped = grouped.select(cols + [ROWS]).append_column(UNIT_ID, ids)
    kept_units = _bound_units(unit_hash, stage, secret)  # always applied: every unit kept when at most n
    grouped = grouped.filter(pa.array(kept_units[ids.to_numpy(zero_copy_only=False)]))
    keys = grouped.select(cols).group_by(cols).aggregate([])
    index, _member, keep = _encode(keys, stage.universe, cols, stage.out_of_universe)
    index_of = keys.filter(keep).append_column(INDEX, index.filter(keep))
    pairs = grouped.join(index_of, keys=cols, join_type="inner")
    bounded = stage.max_keys_per_unit > 1 or stage.max_rows_per_key > 1
    from dpspark.universe.keytypes import int_kind_columns

    text_ints = any(pa.types.is_string(dataset.schema.field(c).type) or pa.types.is_large_string(dataset.schema.field(c).type)
                    for c in int_kind_columns(stage.universe, cols))  # "5" and "05": one index
    if not distinct_keys_keep_indexes(stage.universe, text_ints):  # distinct keys may share an index: one row per (unit, index)
        pairs = pairs.group_by([UNIT_ID, INDEX]).aggregate([(ROWS, "sum")] if bounded else [])
        pairs = pairs.rename_columns([ROWS if c == ROWS + "_sum" else c for c in pairs.column_names])
    if bounded:
        rows = np.minimum(pairs.column(ROWS).to_numpy(), stage.max_rows_per_key)
    else:
        rows = np.ones(pairs.num_rows, dtype=np.int64)
    words = _index_matrix(pairs.column(INDEX))
    unit_ids = _one_chunk(pairs.column(UNIT_ID)).to_numpy(zero_copy_only=False)
    pick = keyed_mix(hash_fixed(words, seed=unit_hash[unit_ids]), secret).view(np.int64)
    del secret
    chosen = _first_k_per_unit(unit_ids, pick, words, stage.max_keys_per_unit)
    kept = pa.table({INDEX: pairs.column(INDEX).take(pa.array(chosen)), ROWS: pa.array(rows[chosen], pa.int64())})
    per_index = kept.group_by(INDEX).aggregate([(ROWS, "sum")])
    return _to_python(per_index.column(INDEX), per_index.column(ROWS + "_sum"))


def order_by_two(primary: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """Row numbers sorted by (primary, secondary), both int64: ``np.lexsort((secondary, primary))``'s order for
    distinct pairs, by Arrow's multi-key sort (about twice as fast at 10^7 rows; the callers check for equal pairs
    and break their ties by other keys, so only the order of distinct pairs matters)."""
    if len(primary) == 0:
        return np.zeros(0, dtype=np.int64)
    table = pa.table({"p": pa.array(primary, pa.int64()), "s": pa.array(secondary, pa.int64())})
    return pc.sort_indices(table, sort_keys=[("p", "ascending"), ("s", "ascending")]).to_numpy().astype(np.int64)


def _first_k_per_unit(unit_ids: np.ndarray, pick: np.ndarray, words: np.ndarray, k: int) -> np.ndarray:
    """Row numbers of each unit's k first pairs in (keyed hash signed, index word) order (Spark's row_number).

    Units with at most k pairs keep them all. The others are sorted by (unit, hash, index word); the word only
    breaks ties of the 64-bit hash within a unit. The same steps run whatever the data (rule 4): no skip when
    no unit is crowded, and the word is always in the sort (a sort only when a tie occurred made the time
    depend on the data).
    """
    per_unit = np.bincount(unit_ids)
    crowded = np.flatnonzero(per_unit[unit_ids] > k)
    u, h = unit_ids[crowded], pick[crowded]
    w = words[crowded]
    pad = -w.shape[1] % 8  # left-pad to whole 8-byte limbs (zero bytes first keep the order)
    if pad:  # public: the universe's word width
        w = np.concatenate([np.zeros((len(w), pad), dtype=np.uint8), w], axis=1)
    limbs = np.ascontiguousarray(w).view(">u8").astype(np.uint64)  # big-endian limbs: lexicographic = unsigned bytes
    order = np.lexsort(tuple(limbs[:, j] for j in reversed(range(limbs.shape[1]))) + (h, u))
    su = u[order]
    starts = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    keep = np.ones(len(unit_ids), dtype=bool)
    keep[crowded[order[rank >= k]]] = False
    return np.flatnonzero(keep)


def _group_count(dataset: "ds.Dataset", columns: list[str]) -> pa.Table:
    """Rows per distinct non-NULL value of ``columns``, by a streaming Acero plan (the rows are never held).

    NULLs form their own groups in the hash aggregate and are dropped from its (small) output, which is
    cheaper than a filter over every row.
    """
    import pyarrow.acero as ac

    plan = ac.Declaration.from_sequence([
        ac.Declaration("scan", ac.ScanNodeOptions(dataset, columns=columns)),
        ac.Declaration("aggregate", ac.AggregateNodeOptions([([], "hash_count_all", None, ROWS)], keys=columns)),
    ])
    try:
        grouped = plan.to_table(use_threads=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as err:
        raise InputError(f"cannot read input: {read_error_text(err)}") from None
    if any(grouped.column(c).null_count for c in columns):
        valid = pc.is_valid(grouped.column(columns[0]))
        for c in columns[1:]:
            valid = pc.and_(valid, pc.is_valid(grouped.column(c)))
        grouped = grouped.filter(valid)
    return grouped


def _encode(keys: pa.Table, universe: "Universe", cols: list[str],
            out_of_universe: str) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(index words, membership, keep mask) of the distinct keys; fails on a non-member in "error" mode."""
    from dpspark.universe.keytypes import engine_key_arrays

    # a dictionary column is its values, a text input's integer key is parsed (unparseable -> NULL)
    arrays = engine_key_arrays(universe, [_one_chunk(keys.column(c)) for c in cols])
    encoded = universe.encode_arrays(arrays)
    if out_of_universe == "error" and encoded.has_out_of_universe():
        raise CuratorError(
            "the input holds keys outside the declared universe and privacy.out_of_universe = 'error' "
            "(curator-side check; the offending values are not shown)"
        )
    keep = encoded.in_universe.fill_null(False)
    return encoded.index, encoded.in_universe, keep


def _bound_units(unit_hash: np.ndarray, stage: CountsStage, secret: bytes) -> np.ndarray:
    """The excess-units rule of the Spark stage over the distinct units (given by their xxhash64).

    Returns a mask keeping the n units with the smallest (keyed hash, unit hash) in signed 64-bit order (every
    unit when there are at most n); raises :class:`CuratorError` for "refuse" with more than n units (the
    curator's option). One code path whatever the number of units (rule 4): the keyed hash of every unit is
    computed and the selection always runs (a linear-time partition to the n-th smallest keyed hash, then the
    units tied with it by unit hash), so whether the input holds more than n units does not change what runs.
    """
    if len(unit_hash) > stage.max_units and stage.on_excess_units == "refuse":
        raise CuratorError(
            f"the input holds more units than privacy.max_units = {stage.max_units} and on_excess_units = "
            "'refuse' (curator-side check, before any noise was drawn); raise max_units or use 'truncate'")
    truncation_key = bytes(b ^ 0x5C for b in secret)  # the Spark stage's derived key
    ranked = keyed_mix(unit_hash, truncation_key).view(np.int64)
    return first_n(ranked, unit_hash.view(np.int64), stage.max_units)


def first_n(ranked: np.ndarray, tie: np.ndarray, n: int) -> np.ndarray:
    """Mask of the min(n, len) entries first in (ranked, tie, position) order: ``np.lexsort((tie, ranked))[:n]``
    without sorting everything (a partition to the n-th smallest ``ranked``, then a sort of its ties only)."""
    k = min(n, len(ranked))
    mask = np.zeros(len(ranked), dtype=bool)
    if k == 0:  # an empty input (or n = 0): nothing to select
        return mask
    t = np.partition(ranked, k - 1)[k - 1]
    below = ranked < t
    tied = np.flatnonzero(ranked == t)
    need = k - int(np.count_nonzero(below))
    mask[below] = True
    mask[tied[np.argsort(tie[tied], kind="stable")[:need]]] = True
    return mask


def _csv_ints_fit_int32(dataset: "ds.Dataset", unit: str) -> bool:
    """Spark's CSV schema inference types an integral column IntegerType when every value fits 32 bits."""
    field = dataset.schema.field(unit)
    if not pa.types.is_integer(field.type):
        return False
    col = scan_table(dataset, [unit]).column(unit)  # one column of a CSV file (CSV inputs are small)
    lo, hi = pc.min(col).as_py(), pc.max(col).as_py()
    return lo is None or (-(1 << 31) <= lo and hi < (1 << 31))


def spark_hash(values: "pa.Array | pa.ChunkedArray", name: str = "unit", seed: "int | np.ndarray" = SPARK_SEED,
               *, int32_units: bool = False) -> np.ndarray:
    """Spark's ``xxhash64`` of one non-NULL column (uint64), for the types the Spark stage sees alike.

    int8/16/32 are Spark Byte/Short/IntegerType (hashInt), int64 is LongType (hashLong), string and
    binary hash their bytes. Other types are refused: their Spark type and hash depend on the reader.
    """
    arr = _one_chunk(values)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if arr.null_count:
        raise ValueError("spark_hash: NULL values must be dropped first")
    if t in (pa.int8(), pa.int16(), pa.int32()) or (int32_units and t == pa.int64()):
        return hash_int(arr.to_numpy(zero_copy_only=False), seed)
    if t == pa.int64():
        return hash_long(arr.to_numpy(zero_copy_only=False), seed)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if large else np.int32)[arr.offset: arr.offset + len(arr) + 1]
        data = arr.buffers()[2]
        return hash_bytes(offsets, np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8), seed)
    raise InputError(f"the Arrow engine hashes unit columns of integer, string or binary type; column {name!r} "
                     f"has type {t} (use engine 'spark', or cast the column)")


# ---------------------------------------------------------------------------------------------- helpers
def _one_chunk(values: "pa.Array | pa.ChunkedArray") -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def _index_matrix(words: "pa.Array | pa.ChunkedArray") -> np.ndarray:
    """(n, width) uint8 matrix of FixedSizeBinary index words."""
    arr = _one_chunk(words)
    width = arr.type.byte_width
    buf = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
    return buf[arr.offset * width: (arr.offset + len(arr)) * width].reshape(len(arr), width)


def _to_python(words: "pa.Array | pa.ChunkedArray", counts: "pa.Array | pa.ChunkedArray") -> tuple[list[int], list[int]]:
    """0-based indexes and counts as Python ints (a fast path when every index fits 64 bits)."""
    matrix = _index_matrix(words)
    limbs = matrix.view(">u8").astype(np.uint64)
    order = np.lexsort(tuple(limbs[:, j] for j in reversed(range(limbs.shape[1]))))  # ascending: finish_counts'
    matrix, limbs = matrix[order], limbs[order]  # sort is then a linear pass
    cnt = _one_chunk(counts).to_numpy(zero_copy_only=False).astype(np.int64)[order].tolist()
    if limbs.shape[0] == 0:
        return [], cnt
    if not limbs[:, :-1].any():
        return (limbs[:, -1] - np.uint64(1)).tolist(), cnt
    return [int.from_bytes(row.tobytes(), "big") - 1 for row in matrix], cnt


# ---------------------------------------------------------------------------------------------- public names
# The steps family kernels reuse (the groups kernels), under public names: the encoder of distinct keys,
# the excess-units rule, the k-keys pick and the CSV integer-width rule, exactly as this stage runs them.
encode_keys = _encode
bound_units = _bound_units
first_k_per_unit = _first_k_per_unit
csv_ints_fit_int32 = _csv_ints_fit_int32
