"""The rows a Spark groups pass's partitions emit and the Python workers' shared steps (no Spark import).

A partition's statistics leave it as summable rows (INDEX word, STAT, SHIFT, VALUE) with |VALUE| < 2^32, one per
(index, stat, shift); flags (:data:`OUTSIDE`, :data:`READ`) ride in the same columns. Used by
:mod:`~dpspark.mechanisms.groups.spark_stats` (units, and rows past 2^52) and
:mod:`~dpspark.mechanisms.groups.spark_rows` (rows as units).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.mechanisms.groups import core, parts

if TYPE_CHECKING:
    from dpspark.mechanisms.groups.stage import GroupsStage

INDEX, UNIT_HASH, HASH, RANK = "__dp_index", "__dp_unit_hash", "__dp_pick", "__dp_rank"
STAT, SHIFT, VALUE = "__dp_stat", "__dp_shift", "__dp_value"
#: the stat id of the one-row flag a partition emits when a kept unit has a key outside the universe
OUTSIDE = -3
#: the stat id of each partition's count of the units it read (distinct units, or rows without a unit column)
READ = -4
#: rows per chunk when rows are units (no unit column): a partition is read in chunks of this many rows
CHUNK_ROWS = 1 << 20


def _bits_name(i: int) -> str:
    return f"__dp_b{i}"


def _chunks(batches: Iterator[pa.RecordBatch], rows: int | None) -> Iterator[pa.Table]:
    """The partition as tables: all of it (``rows`` None), or chunks of about ``rows`` rows. Every batch is taken
    as it is, an empty one too (no branch on a batch's rows: rule 4)."""
    got: list[pa.RecordBatch] = []
    size = 0
    for b in batches:
        got.append(b)
        size += b.num_rows
        if rows is not None and size >= rows:
            yield pa.Table.from_batches(got)
            got, size = [], 0
    if got:
        yield pa.Table.from_batches(got)


def keyed_table(table: pa.Table, cols: "list[str] | tuple[str, ...]") -> pa.Table:
    """``table`` in one chunk per column, its text and binary key columns dictionary-encoded once: what the Arrow
    engine's Parquet reader hands its kernels (:func:`~dpspark.mechanisms.groups.arrow_pass.dictionary_reader`),
    so the key ids, the takes and the group-bys of a chunk work on int32 indices, not on each row's string (Spark
    sends plain strings). A choice on the column types alone (public); the same values, so the same statistics."""
    table = table.combine_chunks()
    for c in cols:
        t = table.schema.field(c).type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            table = table.set_column(table.schema.get_field_index(c), c, pc.dictionary_encode(table.column(c)))
    return table


def _emitted(part: core.Part, stage: "GroupsStage", secret: bytes) -> tuple[np.ndarray, ...]:
    """(index words, stat, shift, value) rows of one part's bounded statistics."""
    keep, units = core.bound(part, stage, secret)
    g, stat, shift, value = core.emit(core.statistics(part, keep, units, stage))
    return part.words[g], stat, shift, value


def _reduced_rows(red: Any) -> tuple[np.ndarray, ...]:
    """(index words, stat, shift, value) rows, |value| < 2^32, of one batch's per-key sums (arrow_pass.Reduced)."""
    at = np.arange(len(red.words), dtype=np.int64)
    stats = [(at, stat, shift, red.sources[name][0]) for stat, shift, name in red.stats]
    words = [red.words]
    for qw, qs, qn in red.cells:  # quantile cells: their own words, after the key words
        stats.append((np.arange(len(qw), dtype=np.int64) + sum(len(w) for w in words), qs, 0, qn))
        words.append(qw)
    g, stat, shift, value = core.emit(stats)
    return np.concatenate(words)[g], stat, shift, value


def row_keys_of(stage: "GroupsStage", secret: bytes, cut_bin: int, coarse: int = 0) -> Any:
    """The mapInArrow function of the row cut: (HASH, INDEX, value bits) of the in-universe rows in ``cut_bin`` of
    the bins ``coarse`` bits coarser than the cut's (the bin stays in the closure, out of the SQL plan)."""
    from dpspark.mechanisms.groups import arrow_pass

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for table in _chunks(batches, CHUNK_ROWS):
            keyed = arrow_pass.row_keys(keyed_table(table, stage.key_columns), stage, secret)
            k = keyed.select(np.flatnonzero((arrow_pass.cut_bins(keyed.hash) >> coarse) == cut_bin))
            arrays = [pa.array(k.hash, pa.int64()), parts.word_array(k.words)] + [pa.array(b, pa.int64()) for b in k.bits]
            yield pa.RecordBatch.from_arrays(arrays, names=[HASH, INDEX] + [_bits_name(i) for i in range(len(k.bits))])

    return run
