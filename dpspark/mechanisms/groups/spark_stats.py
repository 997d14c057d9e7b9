"""Spark side of a ``groups`` release: the :class:`~dpspark.mechanisms.groups.stage.GroupsStage` in one pass.

DataFrame API only (Spark Connect too). The job reads the stage's columns once: rows with a NULL key or
unit are dropped, the input is repartitioned by unit (without a unit column it is not shuffled at all),
and each partition runs, in ``mapInArrow``, the Arrow kernel's own code on its rows: values read by
:func:`~dpspark.engine.numeric.arrow_numeric`, keys encoded by the universe's Arrow encoder
(:mod:`dpspark.mechanisms.groups.parts`), then the shared numpy core (:mod:`dpspark.mechanisms.groups.core`):
a unit's rows are all in one partition, so its k groups and c rows are chosen as on Arrow, and the
partition's per-group statistics (per (unit, group) bounded, then summed per group) leave it as rows
(index, stat, shift, value) with |value| < 2^32, one per (index, stat, shift). One ``groupBy`` of four
columns sums them: fewer than 2^31 partitions, so the int64 sums cannot overflow; the driver folds them
into exact Python ints (:func:`~dpspark.mechanisms.groups.core.decode`). Each partition also emits one row
(stat ``READ``) with the units it read (whole units per partition), summed to the pass's ``units_read``.
Rows as units with values below 2^52 (:func:`~dpspark.mechanisms.groups.arrow_pass.eligible`) take two reads in
:mod:`~dpspark.mechanisms.groups.spark_rows` (the Arrow engine's per-batch group-by, the same rows kept and sums);
the rest of this module's row cut serves rows as units past 2^52.

Truncation to ``max_units`` always runs (whatever the input's size: rule 4) as small jobs before the pass:

* units: the n-th smallest (keyed hash, unit hash, unit value) over the distinct units (the CountsStage
  "truncate" rule: :func:`~dpspark.engine.arrow.counts.bound_units` on Arrow), found from a histogram of the
  keyed hashes' top bits and the units of one bin (:func:`unit_cut`; the distinct units' keyed hashes are
  persisted for those two jobs); the pass keeps the units at or below it.
  Two units share a (keyed hash, unit hash) pair only if their xxhash64 collide: the unit value orders them
  in the same sort (Arrow keeps the first in input order), so exactly n units are kept, by the same steps;
* rows (no unit column): the n-th smallest (row hash, index word, value bits) of the in-universe rows, found
  from a histogram of the hashes' top bits and the rows of one bin (:func:`row_cut`); the pass keeps the rows below it and the driver adds the copies of that row the n rows hold (rows equal in
  that order are equal in every statistic).

The batch secret and the thresholds live only in the closures shipped to the workers (never in SQL).
Key columns are type-checked against the universe on the driver (an empty Arrow column of each Spark
type), value columns by their Spark type: a wrong column fails before any job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.errors import CuratorError, InputError
from dpspark.mechanisms.groups import core, parts
from dpspark.mechanisms.groups.spark_partials import (CHUNK_ROWS, HASH, INDEX, OUTSIDE, RANK, READ, SHIFT, STAT,
                                                      UNIT_HASH, VALUE, _bits_name, _chunks, _emitted, _reduced_rows,
                                                      row_keys_of)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.groups.algorithm import GroupStats
    from dpspark.mechanisms.groups.stage import GroupsStage


def groups_kernel(backend: "SparkBackend", stage: "GroupsStage") -> "list[GroupStats]":
    """Exact statistics per group of ``stage`` on Spark: one pass over the backend's input."""
    backend.progress(f"pass {backend.passes_run + 1}: {len(stage.aggregates)} grouped aggregates on Spark")
    out = groups_spark(backend.frame, stage, backend.batch_secret())
    backend.pass_done()
    backend.progress("group statistics collected on the driver")
    return out


# ------------------------------------------------------------------------------------------------ cuts
@dataclass(frozen=True)
class UnitCut:
    """Keep the units first in (keyed hash, unit hash, unit value) order, signed: those whose pair is below
    (``hash``, ``unit_hash``) and, of those at that pair, the values in ``tied`` (the n-th unit and any unit before
    it that shares its pair: an xxhash64 collision); ``every``: keep all (at most n units). One code path for any
    cut (rule 4): every mask below is built and combined whatever the cut holds."""

    hash: int
    unit_hash: int
    tied: tuple[Any, ...]
    every: bool = False

    @classmethod
    def keep_all(cls) -> "UnitCut":
        """The cut of at most n units: every unit kept, by the same steps."""
        top = (1 << 63) - 1
        return cls(top, top, (), True)

    def kept(self, unit_hash: np.ndarray, secret: bytes, units: "pa.Array") -> np.ndarray:
        """Mask over the distinct units (their uint64 xxhash64 and their values)."""
        from dpspark.engine.keyed import keyed_mix

        h = keyed_mix(unit_hash, truncation_key(secret)).view(np.int64)
        keys = [h, unit_hash.view(np.int64)]
        below = parts.lex_below(keys, [self.hash, self.unit_hash])
        at = parts.lex_below(keys, [self.hash, self.unit_hash], or_equal=True) & ~below
        chosen = np.asarray(pc.is_in(units, value_set=pa.array(list(self.tied), type=units.type))
                            .fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        return below | (at & chosen) | np.bool_(self.every)


@dataclass(frozen=True)
class RowCut:
    """Rule 3's row cut: keep the rows of the keyed-row-hash bins below ``bin`` and, in that bin, the rows below
    the n-th (row hash, index word, value bits); the driver adds the ``copies`` of the n-th row the n rows hold.
    With at most n in-universe rows there is no n-th row: ``bin`` is one past the last and every row is kept."""

    bin: int
    hash: int
    word: bytes
    bits: tuple[int, ...]
    last: bool  # whether (hash, word, bits) is the n-th row (at least n rows)

    @classmethod
    def none(cls, stage: "GroupsStage") -> "RowCut":
        """The cut of at most n rows: every row below it, no copies."""
        from dpspark.mechanisms.groups.arrow_pass import CUT_BITS

        return cls(1 << CUT_BITS, 0, bytes(stage.universe.index_width), (0,) * len(stage.value_columns), False)

    def below(self, h: np.ndarray, words: np.ndarray, bits: list[np.ndarray]) -> np.ndarray:
        from dpspark.mechanisms.groups.arrow_pass import cut_bins

        w = np.frombuffer(self.word, dtype=np.uint8).reshape(1, -1)
        bins = cut_bins(h)
        out = bins < self.bin
        at = np.flatnonzero(bins == self.bin)  # the full order is compared in the cut's bin only
        out[at] = parts.lex_below([h[at], *parts.word_limbs(words[at]), *(b[at] for b in bits)],
                                  [self.hash, *(int(x[0]) for x in parts.word_limbs(w)), *self.bits])
        return out

    def below_keys(self, keyed: Any) -> np.ndarray:
        """:meth:`below` of an :class:`~dpspark.mechanisms.groups.arrow_pass.RowKeys` (words gathered in the bin only)."""
        from dpspark.mechanisms.groups.arrow_pass import cut_bins

        out = cut_bins(keyed.hash) < self.bin
        at = np.flatnonzero(cut_bins(keyed.hash) == self.bin)
        k = keyed.select(at)
        out[at] = self.below(k.hash, k.words, k.bits)
        return out


def truncation_key(secret: bytes) -> bytes:
    """The CountsStage truncation key derived from the batch secret (0x5C; the row rules use 0x36)."""
    return bytes(b ^ 0x5C for b in secret)


# ------------------------------------------------------------------------------------------------ partitions
def _part(table: pa.Table, stage: "GroupsStage", secret: bytes, cut: UnitCut) -> tuple[core.Part, bool]:
    """(the core's rows of one partition, whether a kept unit has a key outside the universe)."""
    from dpspark.engine.arrow.counts import encode_keys

    cols, unit = list(stage.key_columns), stage.unit_column
    x = parts.numeric_values(table, stage.value_columns)
    kid, keys = parts.key_ids(table, cols)
    index, in_universe, member = encode_keys(keys, stage.universe, cols, "drop")
    member_np = np.asarray(member.to_numpy(zero_copy_only=False), dtype=bool)
    keep = np.ones(table.num_rows, dtype=bool)
    uid = unit_hash = None
    if unit is not None:
        enc = pc.dictionary_encode(parts.one_chunk(table.column(unit)))
        uid = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        unit_hash = np.empty(len(enc.dictionary), dtype=np.uint64)
        unit_hash[uid] = table.column(UNIT_HASH).to_numpy().astype(np.int64).view(np.uint64)
        keep = cut.kept(unit_hash, secret, enc.dictionary)[uid]  # always (keep_all at most n units: rule 4)
    outside = False
    if stage.out_of_universe == "error":  # a non-member key (not an unparseable one: NULL) of a kept unit
        not_member = ~np.asarray(in_universe.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)
        outside = bool(not_member[kid[keep]].any())
    keep &= member_np[kid]
    gwords, key_gid = core.unique_words(parts.index_words(index, member_np)[member_np])
    gid_of_key = np.full(len(member_np), -1, dtype=np.int64)
    gid_of_key[member_np] = key_gid.reshape(-1)
    sel = np.flatnonzero(keep)
    part = core.Part(gid=gid_of_key[kid[sel]], words=gwords, x={c: a[sel] for c, a in x.items()})
    if unit is not None:
        assert uid is not None and unit_hash is not None
        part.uid, part.unit_hash, part.units = uid[sel], unit_hash, len(unit_hash)
    return part, outside


def _row_keys(part: core.Part, stage: "GroupsStage", secret: bytes) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(keyed row hash, index word, value bits) per row: the order of the row-level truncation."""
    bits = core.bits_of(part, stage)
    words = part.words[part.gid]
    return core.row_hash(core.SPARK_SEED, words, bits, core.row_key(secret)), words, bits


def partition_stats(stage: "GroupsStage", secret: bytes, unit_cut: UnitCut | None = None,
                    row_cut: RowCut | None = None) -> Any:
    """The mapInArrow function: one partition's rows (whole units) -> summable (index, stat, shift, value).
    No cut given: the cut that keeps everything, applied by the same steps."""
    from dpspark.mechanisms.groups import arrow_pass

    ucut = unit_cut if unit_cut is not None else UnitCut.keep_all()

    # rows as units (eligible): the Arrow engine's per-batch group-by over the rows below the cut's bin, always
    # (the cut's bin is one past the last when at most n rows: then every row is below it; rule 4, one path)
    grouped = arrow_pass.eligible(stage)
    cut = row_cut if row_cut is not None else RowCut.none(stage)
    thresholds = arrow_pass.quantile_thresholds(stage) if grouped else {}
    assert CHUNK_ROWS <= arrow_pass.BATCH_ROWS  # the reduction's per-batch bounds hold for a chunk

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out: list[tuple[np.ndarray, ...]] = []
        outside, read = False, 0
        for table in _chunks(batches, CHUNK_ROWS if stage.unit_column is None else None):
            if grouped:  # the Arrow engine's per-batch reduction (arrow_pass.reduce_batch): no row-level ids
                read += table.num_rows  # every row a unit
                keyed = arrow_pass.row_keys(table, stage, secret)
                below = keyed.rows[cut.below_keys(keyed)]
                red = arrow_pass.reduce_batch(table.take(pa.array(below)), stage, thresholds)
                red.outside = keyed.outside  # a non-member key anywhere in the batch (rule 3, before the cut)
                outside |= red.outside
                if outside:
                    break
                out.append(_reduced_rows(red))
                continue
            part, out_here = _part(table, stage, secret, ucut)
            read += part.units if stage.unit_column is not None else table.num_rows  # whole units per partition
            outside |= out_here
            if outside:  # the job fails on the driver: no statistic is needed
                break
            if stage.unit_column is None:  # values past 2^52 (not eligible): the rows below the n-th, always
                h, words, bits = _row_keys(part, stage, secret)
                kept = np.flatnonzero(cut.below(h, words, bits))
                part = core.Part(gid=part.gid[kept], words=part.words, x={c: a[kept] for c, a in part.x.items()})
            out.append(_emitted(part, stage, secret))  # an empty part too (no branch on its rows: rule 4)
        if outside:
            yield pa.RecordBatch.from_arrays([pa.array([b""], pa.binary()), pa.array([OUTSIDE], pa.int32()),
                                              pa.array([0], pa.int32()), pa.array([1], pa.int64())],
                                             names=[INDEX, STAT, SHIFT, VALUE])
            return
        yield pa.RecordBatch.from_arrays([pa.array([b""], pa.binary()), pa.array([READ], pa.int32()),
                                          pa.array([0], pa.int32()), pa.array([read], pa.int64())],
                                         names=[INDEX, STAT, SHIFT, VALUE])
        if not out:
            return
        words = np.concatenate([o[0] for o in out])
        uniq, pos = core.unique_words(words)
        g, stat, shift, value = core.carry(pos, *(np.concatenate([o[i] for o in out]) for i in (1, 2, 3)))
        yield pa.RecordBatch.from_arrays([parts.word_array(uniq[g]), pa.array(stat, pa.int32()),
                                          pa.array(shift, pa.int32()), pa.array(value, pa.int64())],
                                         names=[INDEX, STAT, SHIFT, VALUE])

    return run


# ------------------------------------------------------------------------------------------------ driver
def _read(df: "DataFrame", stage: "GroupsStage") -> "DataFrame":
    """The stage's columns of the rows with non-NULL keys and unit (plus the unit's xxhash64). A missing
    column, a value column that is not a number or a key column the universe cannot encode fails here,
    from the schema alone (no job)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import BooleanType, NullType, NumericType, StringType

    from dpspark.engine.arrow.counts import encode_keys
    from dpspark.engine.predicate import spark_ref
    from dpspark.engine.spark.counts import check_columns

    if stage.join is not None:  # rule 0 (stage docstring): a broadcast of the public table, no SQL text
        df = stage.join.spark(df)
    check_columns(df, stage.columns)
    dtypes = {f.name: f.dataType for f in df.schema.fields}
    for c in stage.value_columns:
        if not isinstance(dtypes[c], (NumericType, StringType, BooleanType, NullType)):
            raise InputError(f"column {c!r} has Spark type {dtypes[c].simpleString()}, not a number")
    cols, unit = list(stage.key_columns), stage.unit_column
    try:
        empty = pa.table({c: pa.array([], to_arrow_type(dtypes[c])) for c in cols})
    except (TypeError, NotImplementedError, pa.ArrowException):
        raise InputError(f"key column(s) {', '.join(map(repr, cols))}: a Spark type the universe cannot "
                         "encode") from None
    encode_keys(empty, stage.universe, cols, "drop")  # a KeyTypeError names the column and its type only
    if stage.filter is not None:  # rule 0 (stage docstring): a Column built from the parsed tree, no SQL text
        df = df.filter(stage.filter.spark_column(dtypes))
    not_null = F.lit(True)
    for c in cols + ([unit] if unit else []):
        not_null = not_null & spark_ref(c).isNotNull()
    rows = df.filter(not_null).select(*[spark_ref(c).alias(c) for c in stage.columns])
    return rows.withColumn(UNIT_HASH, F.xxhash64(spark_ref(unit))) if unit else rows


def unit_cut(rows: "DataFrame", stage: "GroupsStage", secret: bytes) -> UnitCut:
    """The CountsStage truncation as a cut (the first n units in (keyed hash, unit hash, unit value) order), found
    in two small jobs whatever the data (rule 4): a histogram of the distinct units' keyed hashes by their top
    bits (the bin computed in the JVM from the hash column: no secret in the plan), then the units of the bin
    holding the n-th unit (about units / 2^16 of them: the hash is keyed) ranked on the driver. No sort of every
    unit; a tie of (keyed hash, unit hash) (an xxhash64 collision) is broken by the unit value in the same sort,
    so a collision runs no other step. At most n units: the bin is one past the last, nothing is in it, and the
    cut keeps every unit (:meth:`UnitCut.keep_all`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    from dpspark.engine.spark.counts import keyed_pick_hash
    from dpspark.mechanisms.groups.arrow_pass import CUT_BITS

    unit, n = stage.unit_column, stage.max_units
    assert unit is not None
    units = rows.select(unit, UNIT_HASH).distinct()
    schema = StructType(list(units.schema.fields) + [StructField(HASH, LongType(), False)])
    # persisted: the histogram and the edge both read it (else each reran the scan, the distinct and the keyed hash)
    ranked = units.mapInArrow(keyed_pick_hash(truncation_key(secret)), schema).persist()
    try:
        size = 1 << CUT_BITS
        # the top bits in signed order: (h >> 48) + 2^15 (arithmetic shift) = arrow_pass.cut_bins(h)
        top = (F.shiftright(F.col(HASH), 64 - CUT_BITS) + F.lit(size // 2)).cast(IntegerType())
        hist = np.zeros(size, dtype=np.int64)
        for r in ranked.groupBy(top.alias(RANK)).agg(F.count(F.lit(1)).alias(VALUE)).collect():
            hist[int(r[RANK])] = int(r[VALUE])
        cum = np.cumsum(hist)
        cut_bin = int(np.searchsorted(cum, n))  # size when at most n units: no unit is past it
        left = n - (int(cum[cut_bin - 1]) if cut_bin else 0)  # units of the bin kept
        edge = ranked.mapInArrow(_in_bin(cut_bin), schema).toArrow()
    finally:  # no handler: an error in a job reaches the caller as it is
        ranked.unpersist()
    edge = edge.sort_by([(HASH, "ascending"), (UNIT_HASH, "ascending"), (unit, "ascending")])
    if left > edge.num_rows:  # at most n units: the bin is empty (O(1) on the driver; the jobs above ran the same)
        return UnitCut.keep_all()
    first = edge.slice(0, left)
    th, tu = first.column(HASH)[left - 1].as_py(), first.column(UNIT_HASH)[left - 1].as_py()
    at = pc.and_(pc.equal(first.column(HASH), th), pc.equal(first.column(UNIT_HASH), tu))
    return UnitCut(th, tu, tuple(first.filter(at).column(unit).to_pylist()))


def _in_bin(cut_bin: int) -> Any:
    """The mapInArrow function keeping the units whose keyed hash is in ``cut_bin`` (the bin stays in the closure,
    out of the SQL plan)."""
    from dpspark.mechanisms.groups.arrow_pass import cut_bins

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            h = batch.column(HASH).to_numpy(zero_copy_only=False).astype(np.int64)
            yield batch.filter(pa.array(cut_bins(h) == cut_bin))

    return run


def row_cut(rows: "DataFrame", stage: "GroupsStage", secret: bytes) -> RowCut:
    """Rule 3's row cut (rows are units), found in two small jobs whatever the data (rule 4): a histogram of the
    in-universe rows' keyed row hashes by their top bits (summed per bin), then the rows of the bin holding the
    n-th row (about rows / 2^16 of them: the hash is keyed) ranked on the driver. No sort of every row."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    from dpspark.mechanisms.groups import arrow_pass

    nb = len(stage.value_columns)
    size = 1 << arrow_pass.CUT_BITS
    counted = rows.mapInArrow(_bin_counts(stage, secret), StructType([StructField(RANK, IntegerType(), False),
                                                                       StructField(VALUE, LongType(), False)]))
    hist = np.zeros(size, dtype=np.int64)
    for r in counted.groupBy(RANK).agg(F.sum(VALUE).alias(VALUE)).collect():
        hist[int(r[RANK])] = int(r[VALUE])
    cum = np.cumsum(hist)
    cut_bin = int(np.searchsorted(cum, stage.max_units))  # size when at most n rows: no row is past it
    left = stage.max_units - (int(cum[cut_bin - 1]) if cut_bin else 0)
    schema = StructType([StructField(HASH, LongType(), False), StructField(INDEX, BinaryType(), False)]
                        + [StructField(_bits_name(i), LongType(), False) for i in range(nb)])
    edge = rows.mapInArrow(row_keys_of(stage, secret, cut_bin), schema).toArrow()
    h = edge.column(HASH).to_numpy().astype(np.int64)
    words = parts.binary_matrix(edge.column(INDEX), stage.universe.index_width)
    bits = [edge.column(_bits_name(i)).to_numpy().astype(np.int64) for i in range(nb)]
    order = core.row_order(h, np.ascontiguousarray(words), bits)
    if left > len(order):  # at most n rows: the bin is empty (O(1) on the driver; the jobs above ran the same)
        return RowCut.none(stage)
    i = int(order[left - 1])
    return RowCut(cut_bin, int(h[i]), words[i].tobytes(), tuple(int(b[i]) for b in bits), True)


def _bin_counts(stage: "GroupsStage", secret: bytes) -> Any:
    """The mapInArrow function of the cut's histogram: (bin, rows) of a partition's in-universe rows."""
    from dpspark.mechanisms.groups import arrow_pass

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hist = np.zeros(1 << arrow_pass.CUT_BITS, dtype=np.int64)
        for table in _chunks(batches, CHUNK_ROWS):
            hist += np.bincount(arrow_pass.cut_bins(arrow_pass.row_keys(table, stage, secret).hash),
                                minlength=len(hist))
        at = np.flatnonzero(hist)
        yield pa.RecordBatch.from_arrays([pa.array(at, pa.int32()), pa.array(hist[at], pa.int64())],
                                         names=[RANK, VALUE])

    return run


def _copies(cut: RowCut, kept_rows: int, stage: "GroupsStage", secret: bytes) -> tuple[np.ndarray, ...]:
    """The statistics rows of the n-th row's copies among the n kept rows (n - rows kept below it)."""
    e = stage.max_units - kept_rows if cut.last else 0  # no n-th row (at most n rows): no copies, the same steps
    assert e >= 1 or not cut.last, "the n-th row is one of the n"
    x = {c: np.full(e, np.int64(b)).view(np.float64) for c, b in zip(stage.value_columns, cut.bits)}
    words = np.frombuffer(cut.word, dtype=np.uint8).reshape(1, -1)
    return _emitted(core.Part(gid=np.zeros(e, dtype=np.int64), words=words, x=x), stage, secret)


def groups_spark(df: "DataFrame", stage: "GroupsStage", secret: bytes) -> "list[GroupStats]":
    """The stage over ``df`` with the release's batch ``secret``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    from dpspark.engine.predicate import spark_ref

    from dpspark.mechanisms.groups.arrow_pass import eligible
    from dpspark.mechanisms.groups.spark_rows import rows_spark

    unit = stage.unit_column
    rows = _read(df, stage)
    if eligible(stage):  # rows as units, values below 2^52 (public): two reads (spark_rows)
        return rows_spark(rows, stage, secret)
    # the truncation jobs run whatever the input's size (each cut keeps everything when nothing is over n): a job
    # that ran only when the input held more than max_units rows showed in the release's time and in Spark's logs
    ucut = rcut = None
    if unit is not None:
        ucut = unit_cut(rows, stage, secret)
    else:
        rcut = row_cut(rows, stage, secret)
    if unit is not None:
        rows = rows.repartition(spark_ref(unit))
    out_schema = StructType([StructField(INDEX, BinaryType(), False), StructField(STAT, IntegerType(), False),
                             StructField(SHIFT, IntegerType(), False), StructField(VALUE, LongType(), False)])
    partials = rows.mapInArrow(partition_stats(stage, secret, ucut, rcut), out_schema)
    table = partials.groupBy(INDEX, STAT, SHIFT).agg(F.sum(VALUE).alias(VALUE)).toArrow()
    return summed_stats(table, stage, secret, rcut)


def summed_stats(table: pa.Table, stage: "GroupsStage", secret: bytes,
                 rcut: RowCut | None = None) -> "list[GroupStats]":
    """The GroupStats of the partitions' rows summed per (INDEX, STAT, SHIFT) (on the driver), as a
    :class:`~dpspark.mechanisms.groups.core.PassStats` with the units the partitions read."""
    from dpspark.mechanisms.groups.arrow_stats import OUT_OF_UNIVERSE

    stat = table.column(STAT).to_numpy().astype(np.int64)
    if (stat == OUTSIDE).any():
        raise CuratorError(OUT_OF_UNIVERSE)
    is_read = stat == READ  # the partitions' units read (one summed row): out of the statistics
    read = int(table.column(VALUE).to_numpy().astype(np.int64)[is_read].sum())
    table, stat = table.filter(pa.array(~is_read)), stat[~is_read]  # always (one path: rule 4)
    width = stage.universe.index_width
    words = parts.binary_matrix(table.column(INDEX), width)
    shift = table.column(SHIFT).to_numpy().astype(np.int64)
    value = table.column(VALUE).to_numpy().astype(np.int64)
    if rcut is not None:
        rows_stat = stat == core.ROWS
        kept = sum(int(v) << int(s) for v, s in zip(value[rows_stat].tolist(), shift[rows_stat].tolist()))
        w2, s2, h2, v2 = _copies(rcut, kept, stage, secret)
        words, stat, shift, value = (np.concatenate([words, w2]), np.r_[stat, s2.astype(np.int64)],
                                     np.r_[shift, h2.astype(np.int64)], np.r_[value, v2.astype(np.int64)])
    uniq, pos = core.unique_words(words)
    return core.PassStats(core.decode(pos.astype(np.int64).reshape(-1), core.word_ints(uniq), stat, shift, value,
                                      stage), read)
