"""Arrow side of a ``groups`` release: the :class:`~dpspark.mechanisms.groups.stage.GroupsStage` in one scan.

The stage's columns are read once (numeric columns by :func:`dpspark.engine.numeric.arrow_numeric`); keys
are dictionary-encoded so the universe encodes each distinct key once; units get dense ids (their offset
for integers in a short range, else a dictionary encoding), each unit present hashed once (rules 2, 4 and
5 share the hashes) as Spark hashes them (:func:`dpspark.engine.arrow.counts.spark_hash`), truncated by the CountsStage
rule (:func:`dpspark.engine.arrow.counts.bound_units`); then the shared numpy core
(:mod:`dpspark.mechanisms.groups.core`) bounds and sums all units at once, exactly as the Spark kernel does
per partition (:func:`dpspark.mechanisms.groups.core.bound`: k <= 8 groups per unit by k rounds of per-unit
minima, no sort). Memory: the read columns (O(rows), released once the part holds the kept rows), never a
Python object per row on the fast path.

Without a unit column (every row a unit) the pass is :func:`dpspark.mechanisms.groups.arrow_pass.rows_pass`
instead: two reads batch by batch, one Arrow group-by per batch, memory O(keys + batch), rule 3's row cut
always applied (a histogram of the keyed row hash finds it). Parquet text key columns are read as
dictionaries on both paths (their indices are the key ids: no string is hashed per row).
"""

from __future__ import annotations


from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.errors import CuratorError, InputError
from dpspark.mechanisms.groups import arrow_pass, core

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend
    from dpspark.mechanisms.groups.algorithm import GroupStats
    from dpspark.mechanisms.groups.stage import GroupsStage

OUT_OF_UNIVERSE = arrow_pass.OUT_OF_UNIVERSE  # the one refusal text (the Spark kernel raises it too)


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

    if stage.join is not None:  # rule 0: the public table's columns join the input's
        schema = stage.join.joined_schema(schema)
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


def groups_on(dataset: Any, stage: "GroupsStage", secret: bytes, *, csv_infer: bool = False) -> "list[GroupStats]":
    """The stage over ``dataset`` (a pyarrow dataset or table) with the release's batch ``secret``: a
    :class:`~dpspark.mechanisms.groups.core.PassStats` (it also holds the exact number of units read)."""
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.counts import bound_units, csv_ints_fit_int32, encode_keys, spark_hash
    from dpspark.engine.arrow.inputs import scan_table
    from dpspark.engine.stages import CountsStage
    from dpspark.mechanisms.groups.parts import index_words, key_ids, numeric_values, one_chunk

    if not isinstance(dataset, ds.Dataset):
        dataset = ds.dataset(dataset)
    check_input(dataset.schema, stage)
    if arrow_pass.eligible(stage):  # rows as units: batch-wise, one Arrow group-by per batch, the cut always
        return arrow_pass.rows_pass(dataset, stage, secret)  # type: ignore[return-value]
    cols, unit = list(stage.key_columns), stage.unit_column
    table = scan_table(arrow_pass.dictionary_reader(dataset, stage), stage.input_columns).unify_dictionaries()
    if stage.join is not None:  # rule 0 (stage docstring): the public join, before the filter
        table = stage.join.arrow(table)
    if stage.filter is not None:  # rule 0 (stage docstring): a row passes only where the filter is TRUE
        table = table.filter(stage.filter.arrow_mask(table), null_selection_behavior="drop")
    valid = None  # always built and applied (one code path whatever the NULLs: rule 4)
    for c in cols + ([unit] if unit else []):
        v = pc.is_valid(table.column(c))
        valid = v if valid is None else pc.and_(valid, v)
    if valid is not None:  # None only without key or unit columns (public)
        table = table.filter(valid)
    x = numeric_values(table, stage.value_columns)
    rows = table.num_rows
    kid, keys = key_ids(table, cols)
    counts_stage = CountsStage(key_columns=tuple(cols), universe=stage.universe, unit_column=unit,
                               out_of_universe="drop", max_units=stage.max_units)
    keep = np.ones(rows, dtype=bool)
    uid, read = None, rows  # without a unit column every row read is a unit
    if unit is not None:
        int32_units = csv_infer and csv_ints_fit_int32(dataset, unit)
        uid, n_ids, take = _unit_ids(one_chunk(table.column(unit)))

        def hash_units(ids: np.ndarray) -> np.ndarray:
            return spark_hash(take(ids), unit, int32_units=int32_units)

        present = np.flatnonzero(np.bincount(uid, minlength=n_ids))
        read = len(present)  # the units read (PassStats): the units the truncation ranks
        # rule 2, the CountsStage rule over the units present, always applied (every unit kept when at most n):
        # running it only past max_units rows made whether the input held more than n rows a code path (rule 4)
        unit_hash = np.zeros(n_ids, dtype=np.uint64)  # the units present hashed once, here (rules 2, 4 and 5)
        unit_hash[present] = hash_units(present)
        kept_units = bound_units(unit_hash[present], counts_stage, secret)
        mask = np.zeros(n_ids, dtype=bool)
        mask[present[kept_units]] = True
        keep &= mask[uid]
    index, in_universe, member = encode_keys(keys, stage.universe, cols, "drop")
    member_np = np.asarray(member.to_numpy(zero_copy_only=False), dtype=bool)
    if stage.out_of_universe == "error":  # a non-member key (not an unparseable one: NULL) of a kept unit
        outside = ~np.asarray(in_universe.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)
        if outside[kid[keep]].any():
            raise CuratorError(OUT_OF_UNIVERSE)
    keep &= member_np[kid]
    words_by_key = index_words(index, member_np)
    gwords, key_gid = core.unique_words(words_by_key[member_np])  # distinct keys may share an index
    gid_of_key = np.full(len(member_np), -1, dtype=np.int64)
    gid_of_key[member_np] = key_gid.reshape(-1)
    sel = np.flatnonzero(keep)  # always taken (no "every row kept" shortcut: one path whatever the keys)
    part = core.Part(gid=gid_of_key[kid[sel]], words=gwords, x={c: a[sel] for c, a in x.items()})
    del table, x, kid, keep, valid, v  # the rows are held once, in the part, from here on
    if unit is not None:
        assert uid is not None
        part.uid, part.units, part.unit_hash = uid[sel], n_ids, unit_hash
        del uid, sel
    else:  # every row a unit: the n rows first in keyed row-hash order (always run: rule 4)
        part = truncate_rows(part, stage, secret)
    return core.PassStats(finish(part, stage, secret), read)


def _unit_ids(col: pa.Array) -> tuple[np.ndarray, int, Any]:
    """(unit id per row in [0, n), n, ids -> the units' values): integer units in a range of at most ~2 x rows
    are their own offset (no hash table; ids of absent values are never used), others dictionary-encoded."""
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if pa.types.is_signed_integer(col.type) and len(col):
        values = col.to_numpy(zero_copy_only=False).astype(np.int64)
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 2 * len(values) + 1024:
            dtype = col.type
            return values - lo, hi - lo + 1, lambda ids: pa.array(ids.astype(np.int64) + lo).cast(dtype)
    enc = pc.dictionary_encode(col)
    units = enc.dictionary
    return (enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(units),
            lambda ids: units.take(pa.array(ids)))


def truncate_rows(part: core.Part, stage: "GroupsStage", secret: bytes) -> core.Part:
    """Keep the max_units rows first in (keyed row hash, index word, value bits) order (rows are the units)."""
    bits = core.bits_of(part, stage)
    words = part.words[part.gid]
    h = core.row_hash(core.SPARK_SEED, words, bits, core.row_key(secret))
    kept = first_rows(h, words, bits, stage.max_units)
    return core.Part(gid=part.gid[kept], words=part.words, x={c: a[kept] for c, a in part.x.items()})


def first_rows(h: np.ndarray, words: np.ndarray, bits: list[np.ndarray], n: int) -> np.ndarray:
    """Ascending row numbers of the min(n, rows) rows first in (h, index word, value bits) order: a partition to
    the n-th smallest h, then the full order among the rows tied with it only (the same rows as sorting all)."""
    k = min(n, len(h))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    t = np.partition(h, k - 1)[k - 1]
    below = np.flatnonzero(h < t)
    tied = np.flatnonzero(h == t)
    tied = tied[core.row_order(h[tied], words[tied], [b[tied] for b in bits])[: k - len(below)]]
    return np.sort(np.concatenate([below, tied]))


def finish(part: core.Part, stage: "GroupsStage", secret: bytes) -> "list[GroupStats]":
    """Bound, sum and decode one part (the whole input on Arrow)."""
    keep, units = core.bound(part, stage, secret)
    g, stat, shift, value = core.emit(core.statistics(part, keep, units, stage))
    return core.decode(g, core.word_ints(part.words), stat, shift, value, stage)
