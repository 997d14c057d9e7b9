"""Rows as units on Spark in two reads: the cut's histogram and the sums in one read, then one coarse bin's rows.

The three reads of :func:`~dpspark.mechanisms.groups.spark_stats.row_cut` then the pass (histogram, the cut's bin,
the sums below the cut) each convert every row to Arrow and hash it in a Python worker; here two reads do:

1. every row: its keyed row hash (:func:`~dpspark.mechanisms.groups.arrow_pass.row_keys`), the histogram of the
   hashes' top :data:`~dpspark.mechanisms.groups.arrow_pass.CUT_BITS` bits, and the Arrow engine's per-key sums
   (:func:`~dpspark.mechanisms.groups.arrow_pass.reduce_batch`) of each of the 2^:data:`COARSE_BITS` coarse bins
   (the hash's top bits) apart: rows (word, coarse bin, stat, shift, value), summed by one Spark ``groupBy``;
2. every row hashed again, and the rows of the coarse bin C holding the n-th row (about rows / 16: the hash is
   keyed) sent to the driver as (row hash, index word, value bits), where the first ones in the cut's order
   (hash, word, bits) are kept: n minus the rows of the coarse bins below C.

Each chunk's text key columns are dictionary-encoded once (:func:`~dpspark.mechanisms.groups.spark_partials.keyed_table`:
what the Arrow engine's Parquet reader gives its kernels), and its in-universe rows are taken once in coarse-bin order
and sliced per bin (zero-copy): the first read's Python CPU fell from about 6.5 to 2.9 s per 10^7 rows (three
short text keys); the rest is Spark's scan and row -> Arrow transfer, twice (issue 35 §2).

The statistics are the sums of the coarse bins below C plus those of C's kept rows (computed on the driver from
their exact value bits by the shared core, as the boundary row's copies are): the rows kept are exactly rule 3's
first n, so the release equals the Arrow engine's. At most n rows, C is one past the last coarse bin: the second
read sends no row and every bin is summed, by the same steps (rule 4). Every intermediate fits int64: a
partition's rows carry values below 2^32 (:func:`~dpspark.mechanisms.groups.core.carry`), fewer than 2^31
partitions, and the driver splits each Spark sum in 32-bit halves before it adds the bins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from dpspark.engine.errors import CuratorError
from dpspark.mechanisms.groups import core, parts
from dpspark.mechanisms.groups.arrow_pass import CUT_BITS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.mechanisms.groups.algorithm import GroupStats
    from dpspark.mechanisms.groups.stage import GroupsStage

#: the top bits of the keyed row hash that split the first read's sums (public; 16 coarse bins)
COARSE_BITS = 4
BIN = "__dp_bin"
#: the stat id of the histogram rows of the first read (SHIFT: the cut bin, VALUE: its rows)
HIST = -5


def first_read(stage: "GroupsStage", secret: bytes) -> Any:
    """The mapInArrow function of the first read: one partition's histogram, units read and per (word, coarse bin)
    sums, or one value-free OUTSIDE flag."""
    from dpspark.mechanisms.groups import arrow_pass
    from dpspark.mechanisms.groups.spark_partials import CHUNK_ROWS, INDEX, OUTSIDE, READ, SHIFT, STAT, VALUE, \
        _chunks, _reduced_rows, keyed_table

    thresholds = arrow_pass.quantile_thresholds(stage)
    coarse_n = 1 << COARSE_BITS
    names = [INDEX, BIN, STAT, SHIFT, VALUE]

    def flag(stat: int, shift: np.ndarray, value: np.ndarray) -> pa.RecordBatch:
        """Rows (no word, bin 0, ``stat``, ``shift``, ``value``)."""
        n = len(shift)
        return pa.RecordBatch.from_arrays([pa.array([b""] * n, pa.binary()), pa.array(np.zeros(n, np.int32)),
                                           pa.array(np.full(n, stat, np.int32)), pa.array(shift, pa.int32()),
                                           pa.array(value, pa.int64())], names=names)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hist = np.zeros(1 << CUT_BITS, dtype=np.int64)
        out: list[tuple[np.ndarray, ...]] = []
        outside, read = False, 0
        for table in _chunks(batches, CHUNK_ROWS):
            read += table.num_rows  # every row a unit
            table = keyed_table(table, stage.key_columns)
            keyed = arrow_pass.row_keys(table, stage, secret)
            outside |= keyed.outside  # a non-member key anywhere (rule 3, before the cut)
            if outside:  # the job fails on the driver: no statistic is needed
                break
            bins = arrow_pass.cut_bins(keyed.hash)
            hist += np.bincount(bins, minlength=len(hist))
            coarse = (bins >> (CUT_BITS - COARSE_BITS)).astype(np.uint8)  # < 2^COARSE_BITS <= 256
            order = np.argsort(coarse, kind="stable")  # a radix sort on uint8: O(rows)
            # one take of the in-universe rows in coarse-bin order, then a zero-copy slice per bin
            binned = table.take(pa.array(keyed.rows[order]))
            edges = np.searchsorted(coarse[order], np.arange(coarse_n + 1))
            for b in range(coarse_n):  # every coarse bin, an empty one too (a public count of steps)
                red = arrow_pass.reduce_batch(binned.slice(int(edges[b]), int(edges[b + 1] - edges[b])), stage,
                                              thresholds)
                w, s, h, v = _reduced_rows(red)
                out.append((w, np.full(len(w), b, dtype=np.int64), s, h, v))
        if outside:
            yield flag(OUTSIDE, np.zeros(1, np.int64), np.ones(1, np.int64))
            return
        at = np.flatnonzero(hist)
        yield flag(READ, np.zeros(1, np.int64), np.array([read], np.int64))
        yield flag(HIST, at, hist[at])
        if not out:  # a partition without batches (its size)
            return
        uniq, pos = core.unique_words(np.concatenate([o[0] for o in out]))
        gid = pos * coarse_n + np.concatenate([o[1] for o in out])
        g, stat, shift, value = core.carry(gid, *(np.concatenate([o[i] for o in out]) for i in (2, 3, 4)))
        yield pa.RecordBatch.from_arrays([parts.word_array(uniq[g // coarse_n]), pa.array(g % coarse_n, pa.int32()),
                                          pa.array(stat, pa.int32()), pa.array(shift, pa.int32()),
                                          pa.array(value, pa.int64())], names=names)

    return run


def rows_spark(rows: "DataFrame", stage: "GroupsStage", secret: bytes) -> "list[GroupStats]":
    """The statistics of an eligible rows-as-units stage (:func:`~dpspark.mechanisms.groups.arrow_pass.eligible`)
    over the read frame ``rows`` (:func:`~dpspark.mechanisms.groups.spark_stats._read`), in two reads."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    from dpspark.mechanisms.groups.spark_partials import HASH, INDEX, SHIFT, STAT, VALUE, _bits_name, row_keys_of

    schema = StructType([StructField(INDEX, BinaryType(), False), StructField(BIN, IntegerType(), False),
                         StructField(STAT, IntegerType(), False), StructField(SHIFT, IntegerType(), False),
                         StructField(VALUE, LongType(), False)])
    first = rows.mapInArrow(first_read(stage, secret), schema)
    table = first.groupBy(INDEX, BIN, STAT, SHIFT).agg(F.sum(VALUE).alias(VALUE)).toArrow()
    c, left = coarse_cut(table, stage)
    nb = len(stage.value_columns)
    edge_schema = StructType([StructField(HASH, LongType(), False), StructField(INDEX, BinaryType(), False)]
                             + [StructField(_bits_name(i), LongType(), False) for i in range(nb)])
    edge = rows.mapInArrow(row_keys_of(stage, secret, c, CUT_BITS - COARSE_BITS), edge_schema).toArrow()
    return combined(table, edge, c, left, stage, secret)


def coarse_cut(table: pa.Table, stage: "GroupsStage") -> tuple[int, int]:
    """(the coarse bin C holding the n-th row, the rows of C kept) from the first read's summed rows; C is one past
    the last coarse bin when at most n rows. A key outside the universe (stage refusing them) fails here."""
    from dpspark.mechanisms.groups.arrow_stats import OUT_OF_UNIVERSE
    from dpspark.mechanisms.groups.spark_partials import OUTSIDE, SHIFT, STAT, VALUE

    stat = table.column(STAT).to_numpy().astype(np.int64)
    failed = bool((stat == OUTSIDE).any())
    if failed:  # raised here, not in a handler: the second read does not run
        raise CuratorError(OUT_OF_UNIVERSE)
    is_hist = stat == HIST
    hist = np.zeros(1 << CUT_BITS, dtype=np.int64)
    np.add.at(hist, table.column(SHIFT).to_numpy().astype(np.int64)[is_hist],
              table.column(VALUE).to_numpy().astype(np.int64)[is_hist])
    cum = np.cumsum(hist.reshape(1 << COARSE_BITS, -1).sum(axis=1))
    c = int(np.searchsorted(cum, stage.max_units))
    return c, stage.max_units - (int(cum[c - 1]) if c else 0)


def combined(table: pa.Table, edge: pa.Table, c: int, left: int, stage: "GroupsStage",
             secret: bytes) -> "list[GroupStats]":
    """The statistics: the first read's sums of the coarse bins below ``c`` plus those of the first ``left`` rows
    of ``edge`` (coarse bin ``c``'s rows: row hash, index word, value bits) in the cut's order."""
    from dpspark.mechanisms.groups.spark_partials import HASH, INDEX, READ, SHIFT, STAT, VALUE, _bits_name, _emitted

    width = stage.universe.index_width
    stat = table.column(STAT).to_numpy().astype(np.int64)
    value = table.column(VALUE).to_numpy().astype(np.int64)
    shift = table.column(SHIFT).to_numpy().astype(np.int64)
    read = int(value[stat == READ].sum())
    # each Spark sum split in 32-bit halves (an int64 sum of the bins' halves is exact: fewer than 2^31 rows per
    # key), then carried to one row per (word, stat, shift)
    kept = (stat != HIST) & (stat != READ) & (table.column(BIN).to_numpy().astype(np.int64) < c)
    words = parts.binary_matrix(table.column(INDEX).filter(pa.array(kept)), width)
    st, sh, v = stat[kept], shift[kept], value[kept]
    lo, hi = v & np.int64((1 << 32) - 1), v >> np.int64(32)
    words, st, sh, v = np.concatenate([words, words]), np.r_[st, st], np.r_[sh, sh + 32], np.r_[lo, hi]
    # C's first rows in the cut's order, their statistics from their exact values (the core's rows-as-units path)
    nb = len(stage.value_columns)
    h = edge.column(HASH).to_numpy().astype(np.int64)
    ew = np.ascontiguousarray(parts.binary_matrix(edge.column(INDEX), width))
    bits = [edge.column(_bits_name(i)).to_numpy().astype(np.int64) for i in range(nb)]
    first_rows = core.row_order(h, ew, bits)[:max(left, 0)]
    gw, gid = core.unique_words(ew[first_rows])
    part = core.Part(gid=gid, words=gw, x={col: b[first_rows].view(np.float64)
                                           for col, b in zip(stage.value_columns, bits)})
    w2, s2, h2, v2 = _emitted(part, stage, secret)
    uniq, pos = core.unique_words(np.concatenate([words, w2]))
    g, st, sh, v = core.carry(pos, np.r_[st, s2.astype(np.int64)], np.r_[sh, h2.astype(np.int64)],
                              np.r_[v, v2.astype(np.int64)])
    return core.PassStats(core.decode(g, core.word_ints(uniq), st, sh, v, stage), read)
