"""Rows as units on Arrow: a ``groups`` stage's statistics batch by batch, one Arrow group-by per batch.

Without a unit column every row is a unit, and rules 4 and 5 of
:class:`~dpspark.mechanisms.groups.stage.GroupsStage` keep every row (one group per unit, one row per group),
so the statistics are plain per-key sums: each batch is reduced by one ``Table.group_by(keys)`` over integer
columns (a count of rows, a count of present values, fixed-point int64 values and their squares, split into
limbs where a batch's sum could pass 2^63), then only the batch's *distinct* keys are encoded into the
universe, and the totals are accumulated per universe index word in int64 halves (exact: each half below
2^32 per batch). Memory: one batch plus O(distinct keys) (quantiles: O(keys x occupied cells)).

The same values as :func:`dpspark.mechanisms.groups.arrow_stats.groups_on`'s whole-input path, which also
stays for rule 3's row cut: if more than ``max_units`` in-universe rows are read, :func:`rows_pass` returns
None and the caller reads the input again on that path (as before, whether the cut applies shows in the time;
the choice compares the count to the public n only). Fixed-point values past 2^52 (a public bound) take the
whole-input path too. Per batch, one code path whatever the values: NULLs are masked, never filtered.
"""

from __future__ import annotations

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

#: rows per scanned batch (public): every per-batch bound below uses it, never a batch's actual size
BATCH_ROWS = 1 << 20
_HALF_MASK = np.int64((1 << 32) - 1)
_LIMB = 21
_INT64 = 1 << 63


def eligible(stage: "GroupsStage") -> bool:
    """Whether the batch path computes ``stage`` (public facts only: no unit column, values below 2^52)."""
    return stage.unit_column is None and all(
        a.kind is Kind.COUNT or max(abs(a.L), abs(a.H)) < core.FAST_BOUND for a in stage.aggregates)


def limbs(v: np.ndarray, bound: int) -> list[tuple[np.ndarray, int]]:
    """int64 columns (and shifts) whose sums over any batch of at most :data:`BATCH_ROWS` rows fit in int64 and
    give sum(v) = sum(column sum << shift); |v| <= ``bound`` (a public bound): v itself, or 21-bit limbs."""
    if BATCH_ROWS * bound < _INT64:
        return [(v, 0)]
    mask = np.int64((1 << _LIMB) - 1)
    out: list[tuple[np.ndarray, int]] = []
    for shift in range(0, max(bound.bit_length(), 1) + 1, _LIMB):  # the top limb keeps the sign (arithmetic shift)
        top = shift + _LIMB > bound.bit_length()
        limb = (v >> np.int64(shift)) if top else (v >> np.int64(shift)) & mask
        out.append((limb, shift))
        if top:
            break
    return out


def squares(v: np.ndarray, m: int) -> list[tuple[np.ndarray, int]]:
    """Columns and shifts summing to sum(v^2) (|v| <= m < 2^52): v^2 itself, or the products of 26-bit halves."""
    if m <= 1 << 31:
        return limbs(v * v, m * m)
    a, b = v >> np.int64(26), v & np.int64((1 << 26) - 1)
    out: list[tuple[np.ndarray, int]] = []
    for arr, bnd, shift in ((a * a, 1 << 52, 52), (2 * a * b, 1 << 53, 26), (b * b, 1 << 52, 0)):
        out += [(x, s + shift) for x, s in limbs(arr, bnd)]
    return out


class _Totals:
    """Per universe index word: int64 accumulators (low and high 32-bit halves of each batch's sum, exact)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.words = np.zeros((0, width), dtype=np.uint8)
        self.sums: dict[tuple[int, int], np.ndarray] = {}  # (stat, shift) -> (2, keys) int64 halves
        self.cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # quantiles: (gid, stat, count)

    def ids(self, words: np.ndarray) -> np.ndarray:
        """Global id of each of ``words`` (rows of distinct words), new words appended."""
        n = len(self.words)
        fixed = pa.binary(self.width)
        mine = pa.FixedSizeBinaryArray.from_buffers(fixed, len(words), [None, pa.py_buffer(words.tobytes())])
        known = pa.FixedSizeBinaryArray.from_buffers(fixed, n, [None, pa.py_buffer(self.words.tobytes())])
        at = pc.index_in(mine, value_set=known)
        found = np.asarray(at.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        new = np.flatnonzero(found < 0)
        found[new] = n + np.arange(len(new))
        if len(new):
            self.words = np.concatenate([self.words, words[new]])
            for key, acc in self.sums.items():
                self.sums[key] = np.concatenate([acc, np.zeros((2, len(new)), dtype=np.int64)], axis=1)
        return found

    def add(self, stat: int, shift: int, gid: np.ndarray, total: np.ndarray) -> None:
        """Add int64 ``total`` per row to the words ``gid`` (duplicates allowed)."""
        acc = self.sums.get((stat, shift))
        if acc is None:
            acc = self.sums[(stat, shift)] = np.zeros((2, len(self.words)), dtype=np.int64)
        np.add.at(acc[0], gid, total & _HALF_MASK)
        np.add.at(acc[1], gid, total >> np.int64(32))


def _batches(dataset: Any, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """Record batches of at most :data:`BATCH_ROWS` rows; a read failure is a value-free InputError."""
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.inputs import read_error_text

    if not isinstance(dataset, ds.Dataset):  # an in-memory table
        dataset = ds.dataset(dataset)
    it = dataset.scanner(columns=columns, batch_size=BATCH_ROWS, use_threads=True).to_batches()
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as err:
            raise InputError(f"cannot read input: {read_error_text(err)}") from None
        yield batch


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


def rows_pass(dataset: Any, stage: "GroupsStage") -> "GroupColumns | None":
    """The stage's statistics with every row a unit (:func:`eligible`), or None past ``max_units`` rows."""
    from dpspark.engine.arrow.counts import encode_keys
    from dpspark.mechanisms.groups.arrow_stats import OUT_OF_UNIVERSE
    from dpspark.mechanisms.groups.parts import index_words, numeric_values, one_chunk

    cols = list(stage.key_columns)
    totals: _Totals | None = None
    kept_rows = 0
    thresholds = {j: core.grid_thresholds(a) for j, a in enumerate(stage.aggregates) if a.kind is Kind.QUANTILE}
    for batch in _batches(dictionary_reader(dataset, stage), stage.input_columns):
        table = pa.Table.from_batches([batch])
        if stage.join is not None:  # rule 0, as the whole-input path
            table = stage.join.arrow(table)
        if stage.filter is not None:
            table = table.filter(stage.filter.arrow_mask(table), null_selection_behavior="drop")
        valid = None
        for c in cols:
            if table.column(c).null_count:
                v = pc.is_valid(table.column(c))
                valid = v if valid is None else pc.and_(valid, v)
        if valid is not None:
            table = table.filter(valid)
        if table.num_rows == 0:
            continue
        x = numeric_values(table, stage.value_columns)
        data: dict[str, Any] = {c: one_chunk(table.column(c)) for c in cols}
        sums: list[tuple[int, int, str]] = []  # (stat, shift, column of data summed)
        made: dict[Any, list[tuple[int, str]]] = {}
        values: dict[Any, np.ndarray] = {}

        def column(arr: np.ndarray) -> str:
            name = f"\x00{len(data)}"
            data[name] = arr
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
                made[vk] = [(s, column(a)) for a, s in limbs(v, m)]
                values[vk] = v
            sums += [(base + 1, s, name) for s, name in made[vk]]
            if agg.kind is Kind.VARIANCE:
                if vk + ("q",) not in made:
                    made[vk + ("q",)] = [(s, column(a)) for a, s in squares(values[vk], m)]
                sums += [(base + 2, s, name) for s, name in made[vk + ("q",)]]
        summed = sorted({n for _, _, n in sums if n != "\x00rows"})
        t = pa.table({**{c: data[c] for c in cols}, **{n: data[n] for n in summed}})
        g = t.group_by(cols, use_threads=False).aggregate([([], "count_all")] + [(n, "sum") for n in summed])
        out = {"\x00rows": g.column("count_all")} | {n: g.column(f"{n}_sum") for n in summed}
        gwords, member = _encode(g, cols, stage, encode_keys, index_words, OUT_OF_UNIVERSE)
        if totals is None:
            totals = _Totals(gwords.shape[1])
        if member is None:
            continue
        ids = totals.ids(gwords)
        pos = ids[member[1]]
        rows_here = np.asarray(out["\x00rows"].to_numpy(), dtype=np.int64)[member[0]]
        kept_rows += int(rows_here.sum())
        totals.add(core.ROWS, 0, pos, rows_here)
        if stage.count_units:
            totals.add(core.UNITS, 0, pos, rows_here)
        for stat, shift, name in sums:
            totals.add(stat, shift, pos, np.asarray(out[name].to_numpy(), dtype=np.int64)[member[0]])
        for base, cell in quantiles:
            q = pa.table({**{c: data[c] for c in cols}, "\x00cell": cell}).group_by(
                cols + ["\x00cell"], use_threads=False).aggregate([([], "count_all")])
            qc = np.asarray(q.column("\x00cell").to_numpy(), dtype=np.int64)
            qn = np.asarray(q.column("count_all").to_numpy(), dtype=np.int64)
            qw, qm = _encode(q, cols, stage, encode_keys, index_words, OUT_OF_UNIVERSE)
            if qm is None:
                continue
            qpos = totals.ids(qw)[qm[1]]
            sel = qm[0]
            real = qc[sel] >= 0  # a dropped NULL's cell: no cell at all
            totals.cells.append((qpos[real], base + qc[sel][real], qn[sel][real]))
    if kept_rows > stage.max_units:
        return None
    return _finish(totals, stage)


def _plain(keys: pa.Table, cols: list[str]) -> pa.Table:
    """The key columns with any dictionary decoded (the universe's encoder reads plain values)."""
    from dpspark.mechanisms.groups.parts import one_chunk

    out = {}
    for c in cols:
        col = one_chunk(keys.column(c))
        out[c] = col.dictionary_decode() if pa.types.is_dictionary(col.type) else col
    return pa.table(out)


def _encode(g: pa.Table, cols: list[str], stage: "GroupsStage", encode_keys: Any, index_words: Any,
            refusal: str) -> tuple[np.ndarray, "tuple[np.ndarray, np.ndarray] | None"]:
    """Distinct index words of the grouped rows' member keys, and (member rows, their word's position); rule 3."""
    index, in_universe, member = encode_keys(_plain(g.select(cols), cols), stage.universe, cols, "drop")
    member_np = np.asarray(member.to_numpy(zero_copy_only=False), dtype=bool)
    if stage.out_of_universe == "error":
        outside = ~np.asarray(in_universe.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)
        if outside.any():
            raise CuratorError(refusal)
    rows = np.flatnonzero(member_np)
    words = index_words(index, member_np)[rows]
    if len(rows) == 0:
        return words, None
    uniq, pos = core.unique_words(words)  # distinct keys may share an index
    return uniq, (rows, pos)


def _finish(totals: "_Totals | None", stage: "GroupsStage") -> "GroupColumns":
    """Sorted words, the accumulated statistics as emitted rows, decoded as the whole-input path decodes."""
    if totals is None or len(totals.words) == 0:
        return core.decode(np.zeros(0, np.int64), [], np.zeros(0, np.int32), np.zeros(0, np.int32),
                           np.zeros(0, np.int64), stage)
    words, pos = core.unique_words(totals.words)  # all distinct: pos is the sorted place of each
    G = len(words)
    all_g = np.arange(G, dtype=np.int64)
    stats: list[tuple[np.ndarray, Any, int, np.ndarray]] = []
    for (stat, shift), acc in totals.sums.items():
        for half, extra in ((0, 0), (1, 32)):
            arr = np.zeros(G, dtype=np.int64)
            arr[pos] = acc[half]
            stats.append((all_g, stat, shift + extra, arr))
    if totals.cells:
        qg = np.concatenate([pos[c[0]] for c in totals.cells])
        qs = np.concatenate([c[1] for c in totals.cells]).astype(np.int64)
        qn = np.concatenate([c[2] for c in totals.cells])
        order = np.lexsort((qs, qg))
        qg, qs, qn = qg[order], qs[order], qn[order]
        starts = np.flatnonzero(np.r_[True, (qg[1:] != qg[:-1]) | (qs[1:] != qs[:-1])])
        if len(qn):
            stats.append((qg[starts], qs[starts], 0, np.add.reduceat(qn, starts)))
    g, stat, shift, value = core.emit(stats)
    return core.decode(g, core.word_ints(words), stat, shift, value, stage)
