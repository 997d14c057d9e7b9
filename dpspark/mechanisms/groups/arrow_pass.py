"""Rows as units on Arrow: a ``groups`` stage's statistics batch by batch, one Arrow group-by per batch.

Without a unit column every row is a unit, and rules 4 and 5 of
:class:`~dpspark.mechanisms.groups.stage.GroupsStage` keep every row (one group per unit, one row per group),
so the statistics are plain per-key sums: each batch is reduced by one ``Table.group_by(keys)`` over integer
columns (a count of rows, a count of present values, fixed-point int64 values and their squares, split into
limbs where a batch's sum could pass 2^63), then only the batch's *distinct* keys are encoded into the
universe, and the totals are accumulated per universe index word in int64 halves (exact: each half below
2^32 per batch). Memory: one batch plus O(distinct keys) (quantiles: O(keys x occupied cells)).

The same values as :func:`dpspark.mechanisms.groups.arrow_stats.groups_on`'s whole-input path (which fixed-point
values past 2^52, a public bound, take). Rule 3's row cut is always applied, in two reads (:func:`rows_pass`),
whatever the number of rows: one code path for any data. Per batch, one code path whatever the values: NULLs
are masked, never filtered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.errors import CuratorError, InputError
from dpspark.mechanisms.groups import core
from dpspark.mechanisms.groups.aggregates import Kind

if TYPE_CHECKING:
    from dpspark.mechanisms.groups.columns import GroupColumns
    from dpspark.mechanisms.groups.stage import GroupsStage

OUT_OF_UNIVERSE = ("the input holds keys outside the declared universe and out_of_universe = 'error' "
                   "(curator-side check; the offending values are not shown)")
#: rows per scanned batch (public): every per-batch bound below uses it, never a batch's actual size
BATCH_ROWS = 1 << 22
_HALF_MASK = np.int64((1 << 32) - 1)
_LIMB = 21
_INT64 = 1 << 63


def eligible(stage: "GroupsStage") -> bool:
    """Whether the batch path computes ``stage`` (public facts only: no unit column, values below 2^52)."""
    return stage.unit_column is None and all(
        a.kind is Kind.COUNT or max(abs(a.L), abs(a.H)) < core.FAST_BOUND for a in stage.aggregates)


def limbs(v: np.ndarray, bound: int) -> list[tuple[np.ndarray, int, int]]:
    """(int64 column, shift, bound on its |values|) whose sums over any batch of at most :data:`BATCH_ROWS` rows
    fit in int64 and give sum(v) = sum(column sum << shift); |v| <= ``bound`` (public): v itself, or 21-bit limbs."""
    if BATCH_ROWS * bound < _INT64:
        return [(v, 0, bound)]
    mask = np.int64((1 << _LIMB) - 1)
    out: list[tuple[np.ndarray, int, int]] = []
    for shift in range(0, max(bound.bit_length(), 1) + 1, _LIMB):  # the top limb keeps the sign (arithmetic shift)
        top = shift + _LIMB > bound.bit_length()
        limb = (v >> np.int64(shift)) if top else (v >> np.int64(shift)) & mask
        out.append((limb, shift, 1 << _LIMB))
        if top:
            break
    return out


def squares(v: np.ndarray, m: int) -> list[tuple[np.ndarray, int, int]]:
    """As :func:`limbs`, summing to sum(v^2) (|v| <= m < 2^52): v^2 itself, or the products of 26-bit halves."""
    if m <= 1 << 31:
        return limbs(v * v, m * m)
    a, b = v >> np.int64(26), v & np.int64((1 << 26) - 1)
    out: list[tuple[np.ndarray, int, int]] = []
    for arr, bnd, shift in ((a * a, 1 << 52, 52), (2 * a * b, 1 << 53, 26), (b * b, 1 << 52, 0)):
        out += [(x, s + shift, xb) for x, s, xb in limbs(arr, bnd)]
    return out


class _Totals:
    """Per universe index word, the sums of int64 columns, kept as pending rows (word, halves...) that one Arrow
    group-by folds whenever they pass twice the folded rows plus a few batches (memory O(keys + batch)).

    Each batch adds its per-key sums split in 32-bit halves (the low half in [0, 2^32), the high half below
    2^31 in magnitude), so a folded sum of fewer than 2^31 batches' halves stays below 2^63: exact.
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self.names: list[tuple[int, int, str]] = []  # (stat, shift, source) of each statistic
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.folded_rows = 0
        self.cells: list[pa.Table] = []  # quantiles: (word, stat, count) rows
        self.cell_rows = 0
        self.cells_folded = 0

    def limbs(self, words: np.ndarray) -> dict[str, np.ndarray]:
        """The words as big-endian uint64 limbs, most significant first, left-padded with zero bytes (the keys of
        the folds: Arrow groups integers much faster than fixed-size binary)."""
        pad = -self.width % 8
        if pad:
            words = np.concatenate([np.zeros((len(words), pad), dtype=np.uint8), words], axis=1)
        limbs = np.ascontiguousarray(words).view(">u8").astype(np.uint64)
        return {f"w{j}": limbs[:, j] for j in range(limbs.shape[1])}

    def words(self, t: pa.Table) -> np.ndarray:
        """(rows, width) uint8 words of a table's limb columns."""
        keys = [n for n in t.column_names if n.startswith("w")]
        limbs = np.stack([np.asarray(t.column(k).to_numpy(), dtype=np.uint64) for k in keys], axis=1)
        return np.ascontiguousarray(limbs.astype(">u8")).view(np.uint8)[:, -self.width:]

    def add(self, words: np.ndarray, sums: dict[str, tuple[np.ndarray, int]]) -> None:
        """Add int64 sums (name -> (value per row, a public bound on |value|)) of rows keyed by ``words``
        (duplicates allowed); a bound of 2^32 or more is kept in two 32-bit halves."""
        cols: dict[str, Any] = self.limbs(words)
        for name, (v, bound) in sums.items():
            if bound < 1 << 32:
                cols[f"s{name}"] = v
            else:
                cols[f"l{name}"] = v & _HALF_MASK
                cols[f"h{name}"] = v >> np.int64(32)
        self.pending.append(pa.table(cols))
        self.pending_rows += len(words)
        if self.pending_rows > 2 * self.folded_rows + 4 * BATCH_ROWS:
            self.fold()

    def parts(self, t: pa.Table, name: str) -> list[tuple[np.ndarray, int]]:
        """The folded sums of source ``name`` as (int64 column, extra shift) parts."""
        if f"s{name}" in t.column_names:
            return [(np.asarray(t.column(f"s{name}").to_numpy(), dtype=np.int64), 0)]
        return [(np.asarray(t.column(f"{h}{name}").to_numpy(), dtype=np.int64), x) for h, x in (("l", 0), ("h", 32))]

    def fold(self) -> None:
        """One Arrow group-by over the pending rows: one row per word."""
        if len(self.pending) > 1 or (self.pending and self.pending_rows != self.folded_rows):
            t = pa.concat_tables(self.pending)
            keys = [n for n in t.column_names if n.startswith("w")]
            names = [n for n in t.column_names if not n.startswith("w")]
            g = t.group_by(keys, use_threads=False).aggregate([(n, "sum") for n in names])
            self.pending = [pa.table({**{k: g.column(k) for k in keys}, **{n: g.column(f"{n}_sum") for n in names}})]
            self.pending_rows = self.folded_rows = g.num_rows

    def add_cells(self, words: np.ndarray, stat: np.ndarray, count: np.ndarray) -> None:
        """Add quantile cell counts (word, stat, count) rows."""
        self.cells.append(pa.table({**self.limbs(words), "s": stat, "n": count}))
        self.cell_rows += len(words)
        if self.cell_rows > 2 * self.cells_folded + 4 * BATCH_ROWS:
            self.fold_cells()

    def fold_cells(self) -> None:
        if self.cells:
            t = pa.concat_tables(self.cells)
            keys = [n for n in t.column_names if n.startswith("w")]
            g = t.group_by(keys + ["s"], use_threads=False).aggregate([("n", "sum")])
            self.cells = [pa.table({**{k: g.column(k) for k in keys}, "s": g.column("s"), "n": g.column("n_sum")})]
            self.cell_rows = self.cells_folded = g.num_rows


def _batches(dataset: Any, columns: list[str]) -> Iterator[pa.Table]:
    """Tables of at most :data:`BATCH_ROWS` rows (the scanner's batches, gathered; dictionaries unified); a read
    failure is a value-free InputError."""
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.inputs import read_error_text

    if not isinstance(dataset, ds.Dataset):  # an in-memory table
        dataset = ds.dataset(dataset)
    it = dataset.scanner(columns=columns, batch_size=min(BATCH_ROWS, 1 << 20), use_threads=True,
                         batch_readahead=2, fragment_readahead=1).to_batches()
    held: list[pa.RecordBatch] = []
    rows = 0
    while True:
        failed = None
        try:
            batch = next(it, None)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as err:
            failed = read_error_text(err)
        if failed is not None:  # raised outside the except block: no __context__ carries the reader's error
            raise InputError(f"cannot read input: {failed}")
        if held and (batch is None or rows + batch.num_rows > BATCH_ROWS):
            yield pa.Table.from_batches(held).unify_dictionaries()
            held, rows = [], 0
        if batch is None:
            return
        held.append(batch)
        rows += batch.num_rows


def dictionary_reader(dataset: Any, stage: "GroupsStage") -> Any:
    """The Parquet dataset with its text key columns read as dictionaries (Parquet stores them so: no hashing of
    strings per row); any other dataset as it is. A choice on the schema and config alone."""
    import pyarrow.dataset as ds

    if stage.filter is not None or stage.join is not None or not isinstance(dataset, ds.FileSystemDataset):
        return dataset
    parted = dataset.partitioning is not None and len(dataset.partitioning.schema) > 0
    if not isinstance(dataset.format, ds.ParquetFileFormat) or parted:  # hive columns: left as they are
        return dataset
    text = [c for c in stage.key_columns
            if pa.types.is_string(dataset.schema.field(c).type) or pa.types.is_large_string(dataset.schema.field(c).type)]
    if not text:
        return dataset
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=text),
                               default_fragment_scan_options=dataset.format.default_fragment_scan_options)
    schema = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type), f.nullable) if f.name in text else f
                        for f in dataset.schema])
    try:
        return ds.FileSystemDataset.from_paths(dataset.files, schema=schema, format=fmt, filesystem=dataset.filesystem)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        return dataset


#: the keyed row hash's top bits that bin rows for the cut's histogram (public; 2^16 counts, 512 KiB)
CUT_BITS = 16


def rows_pass(dataset: Any, stage: "GroupsStage", secret: bytes) -> "GroupColumns":
    """The stage's statistics with every row a unit (:func:`eligible`), rule 3's row cut always applied.

    Two reads, whatever the data (rule 4: whether more than ``max_units`` rows are in the universe must not
    change what runs). The first computes every in-universe row's keyed row hash (:func:`row_keys`) and counts
    rows per top :data:`CUT_BITS` bits of it; the histogram gives the bin b holding the n-th row in (hash, index
    word, value bits) order and how many of its rows are kept (no such bin when at most n rows: b is one past
    the last bin and every row is below it). The second reduces the rows of the bins below b batch by batch,
    one Arrow group-by each (the rows' bins kept from the first read: no second hash), and gathers bin b's rows
    (about rows / 2^16 of them, the hash being keyed) to keep the first ones in that order at the end. Memory: one
    batch, the histogram, bin b's rows, O(keys), and 2 bytes a row (the bins; 20 MB at 10^7 rows). The cost of
    one path: the keyed row hash of every row (about 0.2 s per 10^6 rows) and a second read.
    """
    hist = np.zeros(1 << CUT_BITS, dtype=np.int64)
    read = 0  # the rows (units) read after the join, filter and NULL drops (PassStats)
    binned: list[np.ndarray] = []  # per batch, each row's bin (2 bytes a row: the second read hashes nothing)
    for table in _prepared(dataset, stage):
        read += table.num_rows
        keyed = row_keys(table, stage, secret)
        if keyed.outside:
            raise CuratorError(OUT_OF_UNIVERSE)
        bins = cut_bins(keyed.hash)
        hist += np.bincount(bins, minlength=len(hist))
        row_bin = np.zeros(table.num_rows, dtype=np.uint16)  # a row outside the universe: bin 0, dropped below
        row_bin[keyed.rows] = bins
        binned.append(row_bin)
    cum = np.cumsum(hist)
    cut_bin = int(np.searchsorted(cum, stage.max_units))  # len(hist) when at most n rows: no row is past it
    left = stage.max_units - (int(cum[cut_bin - 1]) if cut_bin else 0)  # rows of bin cut_bin kept
    totals: _Totals | None = None
    thresholds = quantile_thresholds(stage)

    def add_reduced(rows: pa.Table) -> None:
        nonlocal totals
        red = reduce_batch(rows, stage, thresholds)
        if totals is None:
            totals = _Totals(red.words.shape[1])
            totals.names = red.stats
        totals.add(red.words, red.sources)  # always, an empty batch too (rule 4: one path whatever the rows)
        for qw, qs, qn in red.cells:
            totals.add_cells(qw, qs, qn)

    edge: list[tuple[pa.Table, RowKeys]] = []
    batches = iter(binned)
    for table in _prepared(dataset, stage):  # the same batches, in the same order (a deterministic scan)
        row_bin = next(batches)
        if len(row_bin) != table.num_rows:
            raise InputError("the input changed while it was read")
        add_reduced(table.filter(pa.array(row_bin < cut_bin)))  # reduce_batch drops the keys outside the universe
        on_edge = table.filter(pa.array(row_bin == cut_bin))
        keyed = row_keys(on_edge, stage, secret)  # only the cut's bin is hashed again
        edge.append((on_edge.take(pa.array(keyed.rows)), keyed))  # its rows in the universe
    if edge:  # the first rows of the cut's bin (every one of them when at most n rows: the bin is empty)
        rows = pa.concat_tables([t for t, _ in edge]).unify_dictionaries().combine_chunks()
        h = np.concatenate([k.hash for _, k in edge])
        words = np.concatenate([k.words for _, k in edge]) if edge else np.zeros((0, 0), np.uint8)
        bits = [np.concatenate([k.bits[i] for _, k in edge]) for i in range(len(stage.value_columns))]
        first = np.sort(core.row_order(h, words, bits)[:left])
        add_reduced(rows.take(pa.array(first, pa.int64())))
    return core.PassStats(_finish(totals, stage), read)


@dataclass
class RowKeys:
    """A batch's in-universe rows (their row numbers) with the order of rule 3's row cut: keyed row hash, index
    word (``key_words[kid]``: the words are gathered per row only where asked), value bits; ``outside``: a key
    outside the universe (not an unparseable one) while the stage refuses them."""

    rows: np.ndarray
    hash: np.ndarray
    kid: np.ndarray
    key_words: np.ndarray
    bits: list[np.ndarray]
    outside: bool

    @property
    def words(self) -> np.ndarray:
        return self.key_words[self.kid]

    def select(self, at: np.ndarray) -> "RowKeys":
        return RowKeys(self.rows[at], self.hash[at], self.kid[at], self.key_words, [b[at] for b in self.bits],
                       self.outside)


def row_keys(table: pa.Table, stage: "GroupsStage", secret: bytes) -> RowKeys:
    """The cut order of a batch's in-universe rows (keys encoded once per distinct key, as the whole-input path).

    :func:`core.row_hash` per row, with its first link (the xxhash64 of the index word) computed once per
    distinct key: the chain's later links (each value's bits) and the keyed mix run per row."""
    from dpspark.engine.arrow.counts import encode_keys
    from dpspark.engine.xxhash64 import SPARK_SEED, hash_fixed
    from dpspark.mechanisms.groups.parts import index_words, key_ids, numeric_values

    cols = list(stage.key_columns)
    kid, keys = key_ids(table, cols)
    index, in_universe, member = encode_keys(keys, stage.universe, cols, "drop")
    member_np = np.asarray(member.to_numpy(zero_copy_only=False), dtype=bool)
    outside = False
    if stage.out_of_universe == "error":
        outside = not bool(np.asarray(in_universe.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)[kid].all())
    rows = np.flatnonzero(member_np[kid])
    kid = kid[rows]
    key_words = index_words(index, member_np)
    x = numeric_values(table, stage.value_columns)
    bits = [core.value_bits(x[c][rows]) for c in stage.value_columns]
    h = hash_fixed(key_words, seed=SPARK_SEED)[kid]
    return RowKeys(rows, core.chain_hash(h, bits, core.row_key(secret)), kid, key_words, bits, outside)


def cut_bins(h: np.ndarray) -> np.ndarray:
    """The top :data:`CUT_BITS` bits of signed hashes in their signed order (the sign bit flipped)."""
    return ((h.view(np.uint64) ^ np.uint64(1 << 63)) >> np.uint64(64 - CUT_BITS)).astype(np.int64)


def _prepared(dataset: Any, stage: "GroupsStage") -> Iterator[pa.Table]:
    """The batches joined, filtered (rule 0) and without NULL keys (rule 1)."""
    cols = list(stage.key_columns)
    for batch in _batches(dictionary_reader(dataset, stage), stage.input_columns):
        table = batch
        if stage.join is not None:  # rule 0, as the whole-input path
            table = stage.join.arrow(table)
        if stage.filter is not None:
            table = table.filter(stage.filter.arrow_mask(table), null_selection_behavior="drop")
        valid = None  # always built and applied (one code path whatever the NULLs: rule 4)
        for c in cols:
            v = pc.is_valid(table.column(c))
            valid = v if valid is None else pc.and_(valid, v)
        if valid is not None:  # None only without key columns (public)
            table = table.filter(valid)
        yield table


def quantile_thresholds(stage: "GroupsStage") -> dict[int, np.ndarray]:
    """Per quantile aggregate (by position): its grid's exact double thresholds (public)."""
    return {j: core.grid_thresholds(a) for j, a in enumerate(stage.aggregates) if a.kind is Kind.QUANTILE}


@dataclass
class Reduced:
    """One batch's per-key sums: member keys' index words (duplicates possible), per statistic (stat, shift,
    source) and per source (int64 sum per word, a public bound on it); quantile cells (words, stat, count)."""

    words: np.ndarray
    stats: list[tuple[int, int, str]]
    sources: dict[str, tuple[np.ndarray, int]]
    cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    rows: int
    outside: bool


def reduce_batch(table: pa.Table, stage: "GroupsStage", thresholds: dict[int, np.ndarray]) -> Reduced:
    """One Arrow group-by of a batch of rows (already joined, filtered, without NULL keys) into per-key sums;
    ``outside``: a key outside the universe, when the stage refuses those (rule 3)."""
    from dpspark.engine.arrow.counts import encode_keys
    from dpspark.mechanisms.groups.parts import index_words, numeric_values

    cols = list(stage.key_columns)  # an empty batch takes the same steps (no shortcut on what a filter kept)
    x = numeric_values(table, stage.value_columns)
    data: dict[str, Any] = {c: table.column(c) for c in cols}
    sums: list[tuple[int, int, str]] = []  # (stat, shift, column of data summed)
    made: dict[Any, list[tuple[int, str]]] = {}
    values: dict[Any, np.ndarray] = {}
    bounds: dict[str, int] = {"\x00rows": 1}

    def column(arr: np.ndarray, bound: int = 1) -> str:  # bound: a public bound on |value| per row
        name = f"\x00{len(data)}"
        data[name], bounds[name] = arr, bound
        return name

    quantiles: list[tuple[int, np.ndarray]] = []
    for j, agg in enumerate(stage.aggregates):
        base = j * core.STAT_STRIDE
        if agg.kind is Kind.COUNT:
            sums.append((base, 0, "\x00rows"))
            continue
        assert agg.column is not None
        rule = stage.null_rule(agg.column)
        xv = x[agg.column]
        present = ~np.isnan(xv)
        xs = np.where(present, xv, 0.0)
        if agg.kind is Kind.QUANTILE:
            ck = ("cell", agg.column, agg.lo, agg.hi, agg.bins)
            if ck not in made:
                cl = core.cells(agg, xs, thresholds[j])
                fill = np.int64(agg.cell_of(rule.value)) if rule.value is not None else np.int64(-1)
                made[ck] = [(0, column(np.where(present, cl, fill)))]
            quantiles.append((base, data[made[ck][0][1]]))
            continue
        if rule.value is not None:
            sums.append((base, 0, "\x00rows"))
        else:
            pk = ("present", agg.column)
            if pk not in made:
                made[pk] = [(0, column(present.astype(np.int64)))]
            sums.append((base, 0, made[pk][0][1]))
        m = max(abs(agg.L), abs(agg.H))
        vk = ("v", agg.column, agg.scale_bits, agg.L, agg.H)
        if vk not in made:
            v = core._fixed(agg, xs)
            assert isinstance(v, np.ndarray)  # eligible(): |L|, |H| < 2^52
            v = np.where(present, v, np.int64(agg.fixed_point(rule.value) if rule.value is not None else 0))
            made[vk] = _columns(limbs(v, m), column)
            values[vk] = v
        sums += [(base + 1, s, name) for s, name in made[vk]]
        if agg.kind is Kind.VARIANCE:
            if vk + ("q",) not in made:
                made[vk + ("q",)] = _columns(squares(values[vk], m), column)
            sums += [(base + 2, s, name) for s, name in made[vk + ("q",)]]
    summed = sorted({n for _, _, n in sums if n != "\x00rows"})
    t = pa.table({**{c: data[c] for c in cols}, **{n: data[n] for n in summed}})
    g = t.group_by(cols, use_threads=False).aggregate([([], "count_all")] + [(n, "sum") for n in summed])
    out = {"\x00rows": g.column("count_all")} | {n: g.column(f"{n}_sum") for n in summed}
    gwords, member, outside = _encode(g, cols, stage, encode_keys, index_words)
    stats = [(core.ROWS, 0, "\x00rows")] + ([(core.UNITS, 0, "\x00rows")] if stage.count_units else []) + sums
    rows_here = np.asarray(out["\x00rows"].to_numpy(), dtype=np.int64)[member]
    sources = {n: (rows_here if n == "\x00rows" else np.asarray(out[n].to_numpy(), dtype=np.int64)[member],
                   BATCH_ROWS * bounds[n]) for n in dict.fromkeys(n for _, _, n in stats)}
    cells = []
    for base, cell in quantiles:
        q = pa.table({**{c: data[c] for c in cols}, "\x00cell": cell}).group_by(
            cols + ["\x00cell"], use_threads=False).aggregate([([], "count_all")])
        qc = np.asarray(q.column("\x00cell").to_numpy(), dtype=np.int64)
        qn = np.asarray(q.column("count_all").to_numpy(), dtype=np.int64)
        qw, qm, _ = _encode(q, cols, stage, encode_keys, index_words)
        real = qc[qm] >= 0  # a dropped NULL's cell: no cell at all
        cells.append((qw[real], base + qc[qm][real], qn[qm][real]))
    return Reduced(gwords, stats, sources, cells, int(rows_here.sum()), outside)


def _plain(keys: pa.Table, cols: list[str]) -> pa.Table:
    """The key columns with any dictionary decoded (the universe's encoder reads plain values)."""
    from dpspark.mechanisms.groups.parts import one_chunk

    out = {}
    for c in cols:
        col = one_chunk(keys.column(c))
        out[c] = col.dictionary_decode() if pa.types.is_dictionary(col.type) else col
    return pa.table(out)


def _columns(parts: list[tuple[np.ndarray, int, int]], column: Any) -> list[tuple[int, str]]:
    """(shift, column name) of each part, its column named with its public per-row bound."""
    return [(s, column(a, bound)) for a, s, bound in parts]


def _encode(g: pa.Table, cols: list[str], stage: "GroupsStage", encode_keys: Any, index_words: Any
            ) -> tuple[np.ndarray, np.ndarray, bool]:
    """Index words of the grouped rows' member keys, those rows, and whether a non-member key (not an unparseable
    one: NULL) is there while the stage refuses those (rule 3)."""
    index, in_universe, member = encode_keys(_plain(g.select(cols), cols), stage.universe, cols, "drop")
    member_np = np.asarray(member.to_numpy(zero_copy_only=False), dtype=bool)
    outside = False
    if stage.out_of_universe == "error":
        outside = not bool(np.asarray(in_universe.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool).all())
    rows = np.flatnonzero(member_np)
    words = index_words(index, member_np)[rows]  # distinct keys may share an index: the folds add them up
    return words, rows, outside


def _finish(totals: "_Totals | None", stage: "GroupsStage") -> "GroupColumns":
    """Sorted words, the accumulated statistics as emitted rows, decoded as the whole-input path decodes."""
    if totals is not None:
        totals.fold()
    if totals is None or not totals.pending or totals.pending[0].num_rows == 0:
        return core.decode(np.zeros(0, np.int64), [], np.zeros(0, np.int32), np.zeros(0, np.int32),
                           np.zeros(0, np.int64), stage)
    t = totals.pending[0]
    words, pos = core.unique_words(totals.words(t))  # all distinct: pos is each one's sorted place
    G = len(words)
    all_g = np.arange(G, dtype=np.int64)
    stats: list[tuple[np.ndarray, Any, int, np.ndarray]] = []
    for stat, shift, name in totals.names:
        for part, extra in totals.parts(t, name):
            arr = np.zeros(G, dtype=np.int64)
            arr[pos] = part
            stats.append((all_g, stat, shift + extra, arr))
    totals.fold_cells()
    if totals.cells and totals.cells[0].num_rows:
        c = totals.cells[0]
        qg = _positions(words, totals.words(c), totals)  # every cell's word has rows: found among the sorted
        stats.append((qg, np.asarray(c.column("s").to_numpy(), dtype=np.int64), 0,
                      np.asarray(c.column("n").to_numpy(), dtype=np.int64)))
    g, stat, shift, value = core.emit(stats)
    return core.decode(g, core.word_ints(words), stat, shift, value, stage)


def _positions(sorted_words: np.ndarray, words: np.ndarray, totals: _Totals) -> np.ndarray:
    """The place of each of ``words`` among ``sorted_words`` (ascending, distinct; every word is there)."""
    a, b = totals.limbs(sorted_words), totals.limbs(words)
    keys = list(a)
    t = pa.table({**{k: a[k] for k in keys}, "p": np.arange(len(sorted_words), dtype=np.int64)})
    q = pa.table({**{k: b[k] for k in keys}, "i": np.arange(len(words), dtype=np.int64)})
    j = q.join(t, keys=keys, join_type="inner", use_threads=False)
    out = np.empty(len(words), dtype=np.int64)
    out[np.asarray(j.column("i").to_numpy(), dtype=np.int64)] = np.asarray(j.column("p").to_numpy(), dtype=np.int64)
    return out
