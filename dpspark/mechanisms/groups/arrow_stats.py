"""Arrow side of a ``groups`` release: the :class:`~dpspark.mechanisms.groups.stage.GroupsStage` in one scan.

The stage's columns are read once (numeric columns by :func:`dpspark.engine.numeric.arrow_numeric`); keys
are dictionary-encoded so the universe encodes each distinct key once; units are dictionary-encoded and
hashed as Spark hashes them (:func:`dpspark.engine.arrow.counts.spark_hash`), truncated by the CountsStage
rule (:func:`dpspark.engine.arrow.counts._bound_units`); then the shared numpy core
(:mod:`dpspark.mechanisms.groups.core`) bounds and sums all units at once, exactly as the Spark kernel does
per partition. Memory: the read columns (O(rows)), never a Python object per row on the fast path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.errors import CuratorError, InputError
from dpspark.mechanisms.groups import core

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend
    from dpspark.mechanisms.groups.algorithm import GroupStats
    from dpspark.mechanisms.groups.stage import GroupsStage

OUT_OF_UNIVERSE = ("the input holds keys outside the declared universe and out_of_universe = 'error' "
                   "(curator-side check; the offending values are not shown)")


def groups_kernel(backend: "ArrowBackend", stage: "GroupsStage") -> "list[GroupStats]":
    """Exact statistics per group of ``stage`` on Arrow: one pass over the backend's input."""
    backend.progress(f"pass {backend.passes_run + 1}: {len(stage.aggregates)} grouped aggregates on Arrow")
    out = groups_on(backend.dataset, stage, backend.batch_secret(), csv_infer=backend.csv_infer)
    backend.pass_done()
    backend.progress("group statistics collected on the driver")
    return out


def check_input(schema: pa.Schema, stage: "GroupsStage") -> None:
    """Missing columns and non-numeric value columns are refused from the schema alone (no value read)."""
    from dpspark.engine.numeric import numeric_type_problem

    names = set(schema.names)
    missing = [c for c in stage.columns if c not in names]
    if missing:
        raise InputError(f"input has no column(s) {', '.join(map(repr, missing))}; "
                         f"it has {', '.join(map(repr, sorted(names)))}")
    for c in stage.value_columns:
        dtype = schema.field(c).type
        if pa.types.is_dictionary(dtype):
            dtype = dtype.value_type
        problem = numeric_type_problem(dtype, c, text_input=True)
        if problem:
            raise InputError(problem)


def _chunk(a: "pa.Array | pa.ChunkedArray") -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        return a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
    return a


def _key_ids(table: pa.Table, cols: list[str]) -> tuple[np.ndarray, pa.Table]:
    """Dense id per row of its (non-NULL) key tuple, and the distinct keys (one row per id)."""
    codes, dicts = [], []
    for c in cols:
        col = _chunk(table.column(c))
        enc = pc.dictionary_encode(col.dictionary_decode() if pa.types.is_dictionary(col.type) else col)
        codes.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        dicts.append(enc.dictionary)
    if len(cols) == 1:
        return codes[0], pa.table({cols[0]: dicts[0]})
    sizes = [len(d) for d in dicts]
    if float(np.prod([float(s) for s in sizes])) < 2.0 ** 62:
        combined = np.zeros(len(codes[0]), dtype=np.int64)
        for code, size in zip(codes, sizes):
            combined = combined * size + code
        uniq, ids = np.unique(combined, return_inverse=True)
        parts, rest = [], uniq
        for size in reversed(sizes):
            parts.append(rest % size)
            rest = rest // size
        parts.reverse()
    else:  # too many combinations for one int64: distinct rows of the code matrix
        uniq_rows, ids = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        parts = [uniq_rows[:, i] for i in range(len(cols))]
    keys = pa.table({c: d.take(pa.array(p)) for c, d, p in zip(cols, dicts, parts)})
    return ids.astype(np.int64).reshape(-1), keys


def groups_on(dataset: Any, stage: "GroupsStage", secret: bytes, *, csv_infer: bool = False) -> "list[GroupStats]":
    """The stage over ``dataset`` (a pyarrow dataset or table) with the release's batch ``secret``."""
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.counts import _bound_units, _csv_ints_fit_int32, _encode, spark_hash
    from dpspark.engine.arrow.inputs import scan_table
    from dpspark.engine.numeric import arrow_numeric
    from dpspark.engine.stages import CountsStage

    if not isinstance(dataset, ds.Dataset):
        dataset = ds.dataset(dataset)
    check_input(dataset.schema, stage)
    cols, unit = list(stage.key_columns), stage.unit_column
    table = scan_table(dataset, stage.columns)
    valid = None
    for c in cols + ([unit] if unit else []):
        if table.column(c).null_count:
            v = pc.is_valid(table.column(c))
            valid = v if valid is None else pc.and_(valid, v)
    if valid is not None:
        table = table.filter(valid)
    x = {}
    for c in stage.value_columns:
        col = _chunk(table.column(c))
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        x[c] = np.asarray(arrow_numeric(col).to_numpy(zero_copy_only=False), dtype=np.float64)
    rows = table.num_rows
    kid, keys = _key_ids(table, cols)
    counts_stage = CountsStage(key_columns=tuple(cols), universe=stage.universe, unit_column=unit,
                               out_of_universe="drop", max_units=stage.max_units)
    keep = np.ones(rows, dtype=bool)
    uid = unit_hash = None
    if unit is not None:
        ucol = _chunk(table.column(unit))
        enc = pc.dictionary_encode(ucol.dictionary_decode() if pa.types.is_dictionary(ucol.type) else ucol)
        uid = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        int32_units = csv_infer and _csv_ints_fit_int32(dataset, unit)
        unit_hash = spark_hash(enc.dictionary, unit, int32_units=int32_units)
        kept_units = _bound_units(unit_hash, counts_stage, secret)  # the CountsStage "truncate" rule
        if kept_units is not None:
            keep &= kept_units[uid]
    index, _member, member = _encode(keys, stage.universe, cols, "drop")
    member_np = np.asarray(member.to_numpy(zero_copy_only=False), dtype=bool)
    if stage.out_of_universe == "error" and not member_np[kid[keep]].all():
        raise CuratorError(OUT_OF_UNIVERSE)
    keep &= member_np[kid]
    words_by_key = _words(index, member_np)
    gwords, key_gid = np.unique(words_by_key[member_np], axis=0, return_inverse=True)  # distinct keys may share an index
    gid_of_key = np.full(len(member_np), -1, dtype=np.int64)
    gid_of_key[member_np] = key_gid.reshape(-1)
    sel = np.flatnonzero(keep)
    part = core.Part(gid=gid_of_key[kid[sel]], words=np.ascontiguousarray(gwords),
                     x={c: a[sel] for c, a in x.items()})
    if unit is not None:
        assert uid is not None and unit_hash is not None
        used, part_uid = np.unique(uid[sel], return_inverse=True)
        part.uid, part.unit_hash = part_uid.astype(np.int64).reshape(-1), unit_hash[used]
    elif part.rows > stage.max_units:  # every row a unit: the n rows first in keyed row-hash order
        part = truncate_rows(part, stage, secret)
    return finish(part, stage, secret)


def _words(index: "pa.Array | pa.ChunkedArray", member: np.ndarray) -> np.ndarray:
    """(distinct keys, width) uint8 index words (zeros where the key is not a member)."""
    arr = _chunk(index)
    width = arr.type.byte_width
    buf = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * width: (arr.offset + len(arr)) * width]
    words = buf.reshape(len(arr), width).copy()
    words[~member] = 0
    return words


def truncate_rows(part: core.Part, stage: "GroupsStage", secret: bytes) -> core.Part:
    """Keep the max_units rows first in (keyed row hash, index word, value bits) order (rows are the units)."""
    bits = core.bits_of(part, stage)
    words = part.words[part.gid]
    h = core.row_hash(core.SPARK_SEED, words, bits, core.row_key(secret))
    kept = np.sort(core.row_order(h, words, bits)[: stage.max_units])
    return core.Part(gid=part.gid[kept], words=part.words, x={c: a[kept] for c, a in part.x.items()})


def finish(part: core.Part, stage: "GroupsStage", secret: bytes) -> "list[GroupStats]":
    """Bound, sum and decode one part (the whole input on Arrow)."""
    keep, units = core.bound(part, stage, secret)
    g, stat, shift, value = core.emit(core.statistics(part, keep, units, stage))
    index = [int.from_bytes(w.tobytes(), "big") - 1 for w in part.words]
    idx = np.asarray(index, dtype=object)[g] if len(index) else np.zeros(0, dtype=object)
    return core.decode(idx.tolist(), stat.tolist(), shift.tolist(), value.tolist(), stage)
