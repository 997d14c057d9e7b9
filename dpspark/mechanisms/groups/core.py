"""The numpy core both groups kernels run: bound one set of whole units' rows, then sum their statistics.

The Arrow kernel calls it once on the whole (truncated) input; the Spark kernel once per partition of a
``repartition`` by unit, in ``mapInArrow``. Either way a unit's rows are all in one call, so the rules of
:class:`~dpspark.mechanisms.groups.stage.GroupsStage` (k groups per unit, c rows per group) see each unit
whole, and the per-group totals are sums over units: the same for any split of the units.

Exactness. A row's fixed-point value v is computed in float64 only while max(|L|, |H|) < 2^52
(:data:`FAST_BOUND`): x 2^b is exact, the clip bounds are exact doubles and the rounding is exact; past it
v is a Python int (:meth:`Aggregate.fixed_point` on the exact value of the double). Quantile cells compare
the double with the smallest double >= each grid point (exact). Sums never round: a ``bincount`` adds
float64 weights only while every partial sum stays below 2^53; otherwise values are split into 21-bit
limbs first (and v^2 into the three products of 26-bit halves), each summed exactly, and a statistic is
carried as parts (int64 array, shift): value = sum(part << shift). :func:`emit` writes them as rows
(group, stat, shift, value) with |value| < 2^32, one per (group, stat, shift): a Spark job has fewer than
2^31 partitions (partition ids are Java ints), so its int64 sum per (group, stat, shift) stays below
2^31 * 2^32 = 2^63 and cannot overflow, whatever the data; :func:`decode` folds the summed rows into Python
ints on the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.keyed import keyed_mix
from dpspark.engine.xxhash64 import SPARK_SEED, hash_fixed, hash_long
from dpspark.mechanisms.groups.aggregates import Aggregate, Kind
from dpspark.mechanisms.groups.columns import GroupColumns

if TYPE_CHECKING:
    from dpspark.mechanisms.groups.stage import GroupsStage

#: per-row fixed-point values use float64 while every |v| stays below this
FAST_BOUND = 1 << 52
#: a float64 bincount is exact while every partial sum stays within this
EXACT_FLOAT = 1 << 53
#: the word a NULL value hashes as (arrow_numeric and spark_numeric never produce a NaN, so no value has it)
NULL_BITS = np.int64(0x7FF8_0000_0000_0001)
#: stat ids: kept rows and kept units per group; aggregate j's component m is j * STAT_STRIDE + m
ROWS, UNITS, STAT_STRIDE = -2, -1, 1 << 17
#: emitted values are split at this many bits (|value| < 2^32: any number of Spark partitions sums in int64)
HALF = 32
_HALF_MASK = (1 << HALF) - 1


def row_key(secret: bytes) -> bytes:
    """The row-choice key derived from the release's batch secret (CountsStage derives its own with 0x5C)."""
    return bytes(b ^ 0x36 for b in secret)


def value_bits(x: np.ndarray) -> np.ndarray:
    """int64 bit patterns of float64 values, -0.0 as 0.0 and NULL (NaN) as :data:`NULL_BITS`."""
    y = np.asarray(x, dtype=np.float64) + 0.0
    bits = y.view(np.int64).copy()
    bits[np.isnan(y)] = NULL_BITS
    return bits


def row_hash(seed: "np.ndarray | int", words: np.ndarray, bits: list[np.ndarray], key: bytes) -> np.ndarray:
    """Signed keyed hash of rows: xxhash64 chained over (seed, index word, each value's bits), then mixed."""
    return chain_hash(hash_fixed(words, seed=seed if isinstance(seed, np.ndarray) else int(seed)), bits, key)


class _InPlace:
    """uint64 steps in place on one array with one scratch buffer (10^7-row hashes: the temporaries of the plain
    numpy forms cost as much as the maths)."""

    def __init__(self, n: int) -> None:
        self.s = np.empty(n, dtype=np.uint64)

    def rotl(self, x: np.ndarray, r: int) -> None:  # x = rotl(x, r)
        np.right_shift(x, np.uint64(64 - r), out=self.s)
        np.left_shift(x, np.uint64(r), out=x)
        np.bitwise_or(x, self.s, out=x)

    def shift_xor(self, x: np.ndarray, r: int) -> None:  # x ^= x >> r
        np.right_shift(x, np.uint64(r), out=self.s)
        np.bitwise_xor(x, self.s, out=x)

    def word(self, h: np.ndarray, lane: np.ndarray) -> None:  # xxhash64's step of one 8-byte word's lane
        from dpspark.engine import xxhash64 as xx

        np.bitwise_xor(h, lane, out=h)
        self.rotl(h, 27)
        np.multiply(h, xx.P1, out=h)
        np.add(h, xx.P4, out=h)

    def fmix(self, h: np.ndarray) -> None:  # xxhash64's final avalanche
        from dpspark.engine import xxhash64 as xx

        self.shift_xor(h, 33)
        np.multiply(h, xx.P2, out=h)
        self.shift_xor(h, 29)
        np.multiply(h, xx.P3, out=h)
        self.shift_xor(h, 32)

    def keyed_mix(self, h: np.ndarray, key: bytes) -> None:  # keyed.keyed_mix: two rounds of keyed.mix64
        from dpspark.engine.keyed import key_words

        for k in key_words(key):
            np.bitwise_xor(h, k, out=h)
            self.shift_xor(h, 30)
            np.multiply(h, np.uint64(0xBF58476D1CE4E5B9), out=h)
            self.shift_xor(h, 27)
            np.multiply(h, np.uint64(0x94D049BB133111EB), out=h)
            self.shift_xor(h, 31)


def chain_hash(h: np.ndarray, bits: list[np.ndarray], key: bytes) -> np.ndarray:
    """:func:`row_hash` from the xxhash64 of (seed, index word) on: the value bits chained, then the keyed mix.

    The same arithmetic as ``keyed_mix(hash_long(..., seed=h), key)`` (tested equal), in place on two buffers:
    the row cut hashes every row of a pass, and the temporaries of the plain form cost as much as the maths."""
    from dpspark.engine import xxhash64 as xx

    u64 = np.uint64
    h = np.array(h, dtype=np.uint64, copy=True)
    t = np.empty_like(h)
    op = _InPlace(len(h))
    with np.errstate(over="ignore"):
        for b in bits:  # xxhash64.hash_long(b, seed=h)
            np.add(h, xx.P5 + u64(8), out=h)
            np.multiply(np.ascontiguousarray(b, dtype=np.int64).view(np.uint64), xx.P2, out=t)
            op.rotl(t, 31)
            np.multiply(t, xx.P1, out=t)
            op.word(h, t)
            op.fmix(h)
        op.keyed_mix(h, key)
    return h.view(np.int64)


def pair_pick(seed: np.ndarray, words: np.ndarray, gid: np.ndarray, secret: bytes) -> np.ndarray:
    """``keyed_mix(hash_fixed(words[gid], seed=seed), secret)`` as int64 (the k-groups rule's keyed pick of each
    row's (unit, group) pair; ``seed``: the unit's Spark hash per row), fused for index words of 8, 16 or 24 bytes:
    each word's lanes (xxhash64's per-word products) are computed once per group and gathered per row, and the
    rest runs in place. Other widths take the plain form. Tested equal to it."""
    from dpspark.engine import xxhash64 as xx

    width = words.shape[1]
    if width % 8 or not 0 < width < 32:
        return keyed_mix(hash_fixed(words[gid], seed=seed), secret).view(np.int64)
    with np.errstate(over="ignore"):
        limbs = np.ascontiguousarray(words).view("<u8").astype(np.uint64, copy=False)  # XXH64's little-endian loads
        lanes = [xx._rotl(limbs[:, j] * xx.P2, 31) * xx.P1 for j in range(width // 8)]  # per group
        h = np.array(seed, dtype=np.uint64, copy=True)
        np.add(h, xx.P5 + np.uint64(width), out=h)
        t = np.empty_like(h)
        op = _InPlace(len(h))
        for lane in lanes:
            np.take(lane, gid, out=t, mode="clip")  # gid < G: "clip" writes in place ("raise" buffers)
            op.word(h, t)
        op.fmix(h)
        op.keyed_mix(h, secret)
    return h.view(np.int64)


def row_order(h: np.ndarray, words: np.ndarray, bits: list[np.ndarray], first: np.ndarray | None = None) -> np.ndarray:
    """Row numbers sorted by (first, h, index word, bits): the canonical order of the c and n row rules."""
    limbs = words.view(">u8").astype(np.uint64) if words.shape[1] % 8 == 0 else words
    keys = [*reversed(bits), *(limbs[:, j] for j in reversed(range(limbs.shape[1]))), h]
    if first is not None:
        keys.append(first)
    return np.lexsort(tuple(keys))


@dataclass
class Part:
    """Rows of whole units: dense group ids, the groups' index words, value columns, and the units."""

    gid: np.ndarray                  # int64 per row, in [0, G)
    words: np.ndarray                # (G, width) uint8 big-endian index words, ascending
    x: dict[str, np.ndarray]         # float64 per row per value column, NaN for NULL
    uid: np.ndarray | None = None    # int64 unit id per row, in [0, units) (None: every row is a unit)
    unit_hash: np.ndarray | None = None  # uint64 Spark xxhash64 per unit id
    units: int = 0                   # the number of unit ids
    hash_units: Callable[[np.ndarray], np.ndarray] | None = None  # unit ids -> hashes, when unit_hash is None

    @property
    def rows(self) -> int:
        return len(self.gid)

    def hashes(self, uids: np.ndarray) -> np.ndarray:
        """Spark's xxhash64 (uint64) of the given unit ids (computed only for the units a rule needs)."""
        if self.unit_hash is not None:
            return self.unit_hash[uids]
        assert self.hash_units is not None
        return self.hash_units(uids)


class PassStats(GroupColumns):
    """A groups pass's GroupStats (ascending by index, kept column-wise: no Python object per group) and
    ``units_read``: the exact number of units
    the pass read (distinct non-NULL units, or rows without a unit column, after the join, the filter and
    the NULL drops): the units the truncation to max_units ranks. Never released as such: the mechanism
    draws its noisy count (:class:`~dpspark.noise.count_quantile.NoisyCount`) from it."""

    def __init__(self, stats: GroupColumns, units_read: int) -> None:
        super().__init__(stats.keys, stats.names, stats.scalar, stats.cells, stats.units)
        self.units_read = int(units_read)


def bits_of(part: Part, stage: "GroupsStage") -> list[np.ndarray]:
    """The value columns' bit words per row, in the stage's public column order."""
    return [value_bits(part.x[c]) for c in stage.value_columns]


#: k (max_groups_per_unit, public) up to which the k-groups rule runs as k rounds of per-unit minima over the
#: rows (:func:`_bound_rounds`, no sort); past it, one sort of the (unit, group) pairs (:func:`_bound_sorted`)
PICK_ROUNDS = 8


def bound(part: Part, stage: "GroupsStage", secret: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(kept row mask, kept units per group) under the k-groups and c-rows rules (nothing to bound per row-unit).

    Both ways give the same rows and counts (tested equal); which one runs depends on the public k alone."""
    G = len(part.words)
    if part.uid is None:  # rows are units (public)
        units = np.bincount(part.gid, minlength=G)
        return np.ones(part.rows, dtype=bool), units * stage.unit_weights[0] if stage.unit_weights else units
    if stage.max_groups_per_unit <= PICK_ROUNDS:
        return _bound_rounds(part, stage, secret)
    return _bound_sorted(part, stage, secret)


def _word_rank(words: np.ndarray) -> np.ndarray:
    """Each group's place among the groups' index words (distinct) in unsigned byte order."""
    w = np.ascontiguousarray(words)
    pad = -w.shape[1] % 8  # left-pad to whole 8-byte limbs (zero bytes first keep the order)
    if pad:
        w = np.concatenate([np.zeros((len(w), pad), dtype=np.uint8), w], axis=1)
    limbs = w.view(">u8").astype(np.uint64)
    order = np.lexsort(tuple(limbs[:, j] for j in reversed(range(limbs.shape[1]))))
    rank = np.empty(len(words), dtype=np.int64)
    rank[order] = np.arange(len(words), dtype=np.int64)
    return rank


def _past_c(pair: np.ndarray, h: np.ndarray, bits: list[np.ndarray], c: int) -> np.ndarray:
    """Positions of the rows past the c first of their pair in (row hash, value bits) order (the c-rows rule)."""
    order = np.lexsort((*reversed(bits), h, pair))  # the index word is the pair's own: (pair, hash, bits)
    sp = pair[order]
    starts = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1]])
    nth = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return order[nth >= c]


def _bound_rounds(part: Part, stage: "GroupsStage", secret: bytes) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bound` for k <= :data:`PICK_ROUNDS`, without a sort or a table of (unit, group) pairs.

    The k-groups rule keeps each unit's k first pairs in (keyed hash, index word) order (the CountsStage rule,
    :func:`dpspark.engine.arrow.counts.first_k_per_unit`). Every row carries its pair's keyed hash
    (:func:`pair_pick`), so round r (r < k, public) takes, per unit, the lexicographic minimum of (hash, word
    rank) over its rows not yet taken (a ``np.minimum.at`` over the unit ids, then one over the few rows that
    hold their unit's least hash): the rows of that one pair (a unit's pairs have distinct words). A unit with
    at most k pairs has all of them taken. Then the c-rows rule runs on the taken rows only (it is per pair, so
    the pairs the k rule drops need no row hash), ranking each crowded pair's rows by (row hash, value bits) as
    before. The same steps run whatever the data (rule 4): k rounds always, the row-hash sort on whatever rows
    are crowded (an empty array too). Memory: two int64 per row (the pick, a gather), the taken rows' pair
    sizes, and k int64 per unit id. Every int64 fits: the pair ids u * k + r < 8 x units, units <= 2 x rows +
    1024 (the Arrow ids) or the distinct units of a Spark partition.
    """
    G, nu, k, c = len(part.words), part.units, stage.max_groups_per_unit, stage.max_rows_per_group
    assert part.uid is not None
    uid = part.uid.astype(np.int64, copy=False)
    gid = part.gid.astype(np.int64, copy=False)
    present = np.flatnonzero(np.bincount(uid, minlength=nu))
    unit_hash = np.zeros(nu, dtype=np.uint64)
    unit_hash[present] = part.hashes(present)  # each unit hashed once (a gather per row below)
    left = pair_pick(unit_hash[uid], part.words, gid, secret)  # the pick, then top once the row is taken
    word_rank = _word_rank(part.words)
    top = np.iinfo(np.int64).max
    taken = np.zeros(len(uid), dtype=bool)  # a free row may hold top as its pick: ``taken`` tells
    rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per round: (rows taken, their pair's rows, pair)
    chosen: list[np.ndarray] = []  # per round, per unit id: the group taken, or -1
    for r in range(k):
        low = np.full(nu, top, dtype=np.int64)
        np.minimum.at(low, uid, left)  # per unit, the least pick of its free rows (top: none, or top itself)
        at = np.flatnonzero(left == low[uid])
        at = at[~taken[at]]  # the free rows holding their unit's least pick (a few per unit)
        rank = word_rank[gid[at]]
        low_rank = np.full(nu, top, dtype=np.int64)
        np.minimum.at(low_rank, uid[at], rank)
        at = at[rank == low_rank[uid[at]]]  # the rows of the unit's first pair in (pick, word) order
        taken[at] = True
        left[at] = top
        u_at = uid[at]
        rounds.append((at, np.bincount(u_at, minlength=nu)[u_at], u_at * k + r))
        g_r = np.full(nu, -1, dtype=np.int64)
        g_r[u_at] = gid[at]
        chosen.append(g_r)
    keep = taken
    at, pair_rows, pair_of = (np.concatenate([x[i] for x in rounds]) for i in range(3))
    busy = pair_rows > c
    crowded = at[busy]
    bits = [value_bits(part.x[col][crowded]) for col in stage.value_columns]
    h = row_hash(unit_hash[uid[crowded]], part.words[gid[crowded]], bits, row_key(secret))
    keep[crowded[_past_c(pair_of[busy], h, bits, c)]] = False
    groups = np.concatenate(chosen)
    has = groups >= 0
    w = None
    if stage.unit_weights:  # weighted selection (k > 1): each kept pair weighs w(m), m = its unit's kept keys
        m = sum((g >= 0).astype(np.int64) for g in chosen)
        w = np.tile(np.asarray(stage.unit_weights, dtype=np.int64)[np.maximum(m, 1) - 1], k)[has]
    return keep, _pair_counts(groups[has], w, G)


def _bound_sorted(part: Part, stage: "GroupsStage", secret: bytes) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bound` by a table of the (unit, group) pairs and one sort of the busy units' pairs (any k)."""
    from dpspark.engine.arrow.counts import first_k_per_unit

    G = len(part.words)
    keep = np.ones(part.rows, dtype=bool)
    assert part.uid is not None
    nu = part.units
    # one code path whatever the rows (rule 4): no "every unit has one row" shortcut, no skip when no pair is
    # crowded or no unit busy (the steps run on empty arrays), and no tie-only sort: equal rows of one unit and
    # group share their row hash (duplicate rows are common), so the (pair, hash, bits) sort always runs
    code = part.uid.astype(np.int64) * G + part.gid
    enc = pc.dictionary_encode(pa.array(code, pa.int64()))  # a hash table, not a sort: pair ids in first-seen order
    pid = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    pair_code = enc.dictionary.to_numpy(zero_copy_only=False).astype(np.int64)
    per_pair = np.bincount(pid, minlength=len(pair_code))
    c = stage.max_rows_per_group
    crowded = np.flatnonzero(per_pair[pid] > c)
    bits = [b[crowded] for b in bits_of(part, stage)]
    words = part.words[part.gid[crowded]]
    h = row_hash(part.hashes(part.uid[crowded]), words, bits, row_key(secret))
    keep[crowded[_past_c(pid[crowded], h, bits, c)]] = False
    pair_uid, pair_gid = pair_code // G, pair_code % G
    k = stage.max_groups_per_unit
    kept_pair = np.ones(len(pair_code), dtype=bool)
    busy = np.flatnonzero(np.bincount(pair_uid, minlength=nu)[pair_uid] > k)
    words = part.words[pair_gid[busy]]
    pick = keyed_mix(hash_fixed(words, seed=part.hashes(pair_uid[busy])), secret).view(np.int64)
    chosen = first_k_per_unit(pair_uid[busy], pick, words, k)  # the CountsStage rule
    kept_pair[busy] = False
    kept_pair[busy[chosen]] = True
    keep &= kept_pair[pid]
    w = None
    if stage.unit_weights:  # weighted selection (k > 1): each kept pair weighs w(m), m = its unit's kept keys
        m = np.bincount(pair_uid[kept_pair], minlength=nu)
        w = np.asarray(stage.unit_weights, dtype=np.int64)[np.maximum(m[pair_uid], 1) - 1][kept_pair]
    return keep, _pair_counts(pair_gid[kept_pair], w, G)


def _pair_counts(gids: np.ndarray, weights: "np.ndarray | None", G: int) -> np.ndarray:
    """Per group: the kept (unit, group) pairs, or with weighted selection the sum of their int64 weights."""
    if weights is None:
        return np.bincount(gids, minlength=G)
    # float bincount is exact: weights < 2^20 (stage check), fewer than 2^33 pairs, so every sum < 2^53
    return np.bincount(gids, weights=weights, minlength=G).astype(np.int64)


# ------------------------------------------------------------------------------------------------ sums
Parts = list[tuple[np.ndarray, int]]


def exact_bincount(ids: np.ndarray, v: np.ndarray, n: int, bound_: int) -> Parts:
    """sum of int64 ``v`` (|v| <= bound_) per id in [0, n), exactly, as parts (int64 array, shift)."""
    if len(v) == 0 or bound_ == 0:
        return []
    if len(v) * bound_ <= EXACT_FLOAT:
        return [(np.bincount(ids, weights=v.astype(np.float64), minlength=n).astype(np.int64), 0)]
    if bound_ <= 1 << 21:  # many rows: chunks of 2^32 rows keep each float partial sum exact
        total = np.zeros(n, dtype=np.int64)
        for s in range(0, len(v), 1 << 32):
            total += np.bincount(ids[s:s + (1 << 32)], weights=v[s:s + (1 << 32)].astype(np.float64),
                                 minlength=n).astype(np.int64)
        return [(total, 0)]
    mask = np.int64((1 << 21) - 1)
    out: Parts = []
    for shift in (0, 21, 42):  # v = l0 + l1 2^21 + l2 2^42: l0, l1 in [0, 2^21), l2 signed with |l2| <= 2^21
        limb = (v >> np.int64(shift)) if shift == 42 else (v >> np.int64(shift)) & mask
        out += [(a, s + shift) for a, s in exact_bincount(ids, limb, n, 1 << 21)]
    return out


def square_parts(ids: np.ndarray, v: np.ndarray, n: int, m: int) -> Parts:
    """sum of v^2 per id, exactly (|v| <= m < 2^52): v = a 2^26 + b, v^2 = a^2 2^52 + 2ab 2^26 + b^2."""
    if m <= 1 << 31:
        return exact_bincount(ids, v * v, n, m * m)
    a, b = v >> np.int64(26), v & np.int64((1 << 26) - 1)
    out: Parts = []
    for arr, bnd, shift in ((a * a, 1 << 52, 52), (2 * a * b, 1 << 53, 26), (b * b, 1 << 52, 0)):
        out += [(x, s + shift) for x, s in exact_bincount(ids, arr, n, bnd)]
    return out


def object_parts(ids: np.ndarray, v: list[int], n: int) -> Parts:
    """sum of Python-int values per id (the slow path past 2^52), as one object part."""
    total = np.zeros(n, dtype=object)
    total[:] = 0
    for i, x in zip(ids.tolist(), v):
        total[i] += x
    return [(total, 0)]


def grid_thresholds(agg: Aggregate) -> np.ndarray:
    """Per grid point v_j (j = 0..bins): the smallest double >= v_j, so x >= v_j iff x >= threshold (exact)."""
    assert agg.bins is not None
    out = np.empty(agg.bins + 1, dtype=np.float64)
    for j in range(agg.bins + 1):
        g = agg.grid_point(j)
        try:
            d = float(g)
        except OverflowError:
            d = float("inf") if g > 0 else -np.finfo(np.float64).max
        if d != float("inf") and Fraction(d) < g:
            d = float(np.nextafter(d, np.inf))
        out[j] = d
    return out


def cells(agg: Aggregate, x: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Quantile cell per (non-NULL) value: :meth:`Aggregate.cell_of`, exactly."""
    assert agg.bins is not None
    j = np.searchsorted(thresholds, x, side="right") - 1
    return np.clip(j, 0, agg.bins - 1).astype(np.int64)


def _fixed(agg: Aggregate, x: np.ndarray) -> "np.ndarray | list[int]":
    """v = clip(round(x S), L, H) per value (no NaN): int64 below 2^52, else Python ints. Warning-free."""
    L, H = agg.L, agg.H
    if max(abs(L), abs(H)) < FAST_BOUND:
        # clip x to [L / S, H / S] first (exact doubles: bounds below 2^52 over a power of two), then scale:
        # x S is then exact and cannot overflow, so no value can raise numpy's overflow warning (a warning is
        # a side channel: whether it appears would depend on the data); the result is clip(x S, L, H) exactly.
        # Then round half away from zero as sign(y) floor(|y| + 1/2), exact because |y| + 1/2 is a double for
        # |y| < 2^52 (the ulp there is at most 1/2); in place, 10^7 rows
        y = np.clip(x, float(Fraction(L, agg.scale)), float(Fraction(H, agg.scale)))
        np.multiply(y, float(agg.scale), out=y)
        negative = np.signbit(y)
        np.abs(y, out=y)
        y += 0.5
        np.floor(y, out=y)
        v = y.astype(np.int64)
        np.negative(v, out=v, where=negative)
        return v
    # past 2^52 exact Python ints; clipped first to +-2^k >= max(|L|, |H|) / S (a power of two: exact) so
    # that +-inf need no branch of their own and :meth:`Aggregate.fixed_point` clips exactly
    lim = 2.0 ** (max(abs(L), abs(H)).bit_length() - agg.scale_bits)
    return [agg.fixed_point(Fraction(d)) for d in np.clip(x, -lim, lim).tolist()]


def statistics(part: Part, keep: np.ndarray, units: np.ndarray, stage: "GroupsStage") -> list[tuple[np.ndarray, Any, int, np.ndarray]]:
    """Per statistic: (group ids, stat id, shift, values) over the kept rows (sparse for quantile cells).

    One code path whatever the data: every row is computed, and a row that is not kept (bounding) or has no
    value (NULL under "drop") is sent to a spare group G that is cut off at the end, never filtered out.
    Shortcuts for "every row kept" or "no NULL" made one NULL row cost a visibly slower masked pass (a
    timing side channel outside the DP output).
    """
    G = len(part.words)
    gid = part.gid
    out: list[tuple[np.ndarray, Any, int, np.ndarray]] = []
    all_g = np.arange(G, dtype=np.int64)

    def dense(stat: int, parts: Parts) -> None:
        out.extend((all_g, stat, shift, arr[:G]) for arr, shift in parts)  # the spare group G dropped

    def ids(w: np.ndarray) -> np.ndarray:  # each row's group, or the spare group G where w is False
        return np.where(w, gid, np.int64(G))

    def count(g: np.ndarray) -> np.ndarray:
        return np.bincount(g, minlength=G + 1).astype(np.int64)

    kept_ids = ids(keep)
    rows = count(kept_ids)
    dense(ROWS, [(rows, 0)])
    if stage.count_units:
        dense(UNITS, [(units.astype(np.int64), 0)])
    cache: dict[Any, Any] = {}
    for j, agg in enumerate(stage.aggregates):
        base = j * STAT_STRIDE
        if agg.kind is Kind.COUNT:
            dense(base, [(rows, 0)])
            continue
        assert agg.column is not None
        rule = stage.null_rule(agg.column)
        x = part.x[agg.column]
        present = ~np.isnan(x)
        xs = np.where(present, x, 0.0)  # a NULL reads 0 (in group G, or replaced by the imputed value below)
        g = kept_ids if rule.value is not None else ids(keep & present)
        if agg.kind is Kind.QUANTILE:
            assert agg.bins is not None
            ck = ("cell", agg.column, agg.lo, agg.hi, agg.bins)
            if ck not in cache:
                cl = cells(agg, xs, grid_thresholds(agg))
                if rule.value is not None:
                    cl = np.where(present, cl, np.int64(agg.cell_of(rule.value)))
                code, counts = np.unique(g * agg.bins + cl, return_counts=True)
                real = code < G * agg.bins  # the spare group's codes are the last: cut them off
                code, counts = code[real], counts[real]
                cache[ck] = (code // agg.bins, code % agg.bins, counts.astype(np.int64))
            qg, qc, qn = cache[ck]
            out.append((qg, base + qc, 0, qn))  # sparse: occupied (group, cell) pairs only
            continue
        dense(base, [(rows if rule.value is not None else count(g), 0)])
        vk = ("v", agg.column, agg.scale_bits, agg.L, agg.H)
        if vk not in cache:
            v = _fixed(agg, xs)
            m = max(abs(agg.L), abs(agg.H))
            if isinstance(v, np.ndarray):
                if rule.value is not None:
                    v = np.where(present, v, np.int64(agg.fixed_point(rule.value)))
                cache[vk] = (exact_bincount(g, v, G + 1, m), (lambda v=v, g=g, m=m: square_parts(g, v, G + 1, m)))
            else:
                imputed = 0 if rule.value is None else agg.fixed_point(rule.value)
                v = [p * t + (1 - p) * imputed  # branch-free: the same bytecodes for every row
                     for t, p in zip(v, present.astype(np.int64).tolist())]
                cache[vk] = (object_parts(g, v, G + 1),
                             (lambda v=v, g=g: object_parts(g, [t * t for t in v], G + 1)))
        t_parts, q_make = cache[vk]
        dense(base + 1, t_parts)
        if agg.kind is Kind.VARIANCE:
            qk = vk + ("q",)
            if qk not in cache:
                cache[qk] = q_make()
            dense(base + 2, cache[qk])
    return out


def unique_words(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct index words ascending, the position of each row's word): ``np.unique(axis=0)`` without its
    slow byte-string sort (a lexsort of big-endian 64-bit limbs orders the words as unsigned numbers)."""
    n = len(words)
    if n == 0:
        return words.reshape(0, words.shape[1]), np.zeros(0, dtype=np.int64)
    limbs = np.ascontiguousarray(words).view(">u8").astype(np.uint64)
    order = np.lexsort(tuple(limbs[:, j] for j in reversed(range(limbs.shape[1]))))
    sl = limbs[order]
    new = np.r_[True, (sl[1:] != sl[:-1]).any(axis=1)]
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.cumsum(new) - 1
    return np.ascontiguousarray(words[order[new]]), pos


# ------------------------------------------------------------------------------------------------ rows out
def word_ints(words: np.ndarray) -> list[int]:
    """0-based universe indexes of (n, width) big-endian index words (a fast path below 2^64)."""
    if len(words) == 0:
        return []
    limbs = words.view(">u8").astype(np.uint64)
    if not limbs[:, :-1].any():
        return (limbs[:, -1] - np.uint64(1)).tolist()
    return [int.from_bytes(w.tobytes(), "big") - 1 for w in words]


def emit(stats: list[tuple[np.ndarray, Any, int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows (group id, stat, shift, value) with 0 < |value| < 2^32: each part split in 32-bit halves."""
    gs, st, sh, vs = [], [], [], []
    for g, stat, shift, arr in stats:
        stat_of = np.broadcast_to(np.asarray(stat, dtype=np.int32), g.shape)
        if arr.dtype == object:  # the slow path's Python ints: as many 32-bit limbs as each needs
            for gi, si, x in zip(g.tolist(), stat_of.tolist(), arr.tolist()):
                s = shift
                while x:
                    low = x if -_HALF_MASK <= x <= _HALF_MASK else x & _HALF_MASK
                    gs.append(np.array([gi], np.int64)); st.append(np.array([si], np.int32))
                    sh.append(np.array([s], np.int32)); vs.append(np.array([low], np.int64))
                    x = (x - low) >> HALF
                    s += HALF
            continue
        lo, hi = arr & np.int64(_HALF_MASK), arr >> np.int64(HALF)
        for part, s in ((lo, shift), (hi, shift + HALF)):
            nz = np.flatnonzero(part)
            if len(nz):
                gs.append(g[nz]); vs.append(part[nz]); st.append(stat_of[nz])
                sh.append(np.full(len(nz), s, np.int32))
    if not gs:
        return (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int64))
    return (np.concatenate(gs).astype(np.int64), np.concatenate(st).astype(np.int32),
            np.concatenate(sh).astype(np.int32), np.concatenate(vs).astype(np.int64))


def carry(gid: np.ndarray, stat: np.ndarray, shift: np.ndarray, value: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The same totals as rows with one row per (group, stat, shift) and 0 < |value| < 2^32 (:data:`HALF`).

    Exact when every input value is below 2^32 and no key has 2^31 rows: the int64 sums stay below 2^63.
    Each round adds the rows per key and moves the bits above 32 of a total outside (-2^32, 2^32) to the
    key at shift + 32 (the carry's magnitude is below 2^31, and a key's total after the first round below
    2^33); a carry climbs one 32-bit level per round, so the rounds are bounded by the levels (a handful).
    """
    g, st, sh, v = (np.asarray(a, dtype=np.int64) for a in (gid, stat, shift, value))
    while len(g):
        order = np.lexsort((sh, st, g))
        g, st, sh, v = g[order], st[order], sh[order], v[order]
        new = np.r_[True, (g[1:] != g[:-1]) | (st[1:] != st[:-1]) | (sh[1:] != sh[:-1])]
        starts = np.flatnonzero(new)
        total = np.add.reduceat(v, starts)
        g, st, sh = g[starts], st[starts], sh[starts]
        big = np.abs(total) > _HALF_MASK  # a value in (-2^32, 2^32) stays as it is (no sign carry)
        lo = np.where(big, total & np.int64(_HALF_MASK), total)
        hi = np.where(big, total >> np.int64(HALF), 0)
        up = np.flatnonzero(hi)
        if len(up) == 0:
            v = lo
            break
        g, st = np.r_[g, g[up]], np.r_[st, st[up]]
        sh, v = np.r_[sh, sh[up] + HALF], np.r_[lo, hi[up]]
    nz = np.flatnonzero(v)
    return g[nz], st[nz].astype(np.int32), sh[nz].astype(np.int32), v[nz]


def decode(pos: np.ndarray, index: list[int], stat: np.ndarray, shift: np.ndarray, value: np.ndarray,
           stage: "GroupsStage") -> "GroupColumns":
    """Summed rows (group position, stat, shift, value) -> GroupStats ascending by index, groups with kept rows,
    held column-wise (:class:`~dpspark.mechanisms.groups.columns.GroupColumns`, a sequence of GroupStats).

    ``index[p]`` is the 0-based universe index of group position p (ascending in p). Values at shift 0 of
    the scalar statistics are added in an int64 matrix (each below 2^63: a sum of fewer than 2^31 emitted values);
    the rare rest (high halves, limbs, quantile cells) are added as Python ints.
    """
    from dpspark.mechanisms.groups.columns import object_column

    G = len(index)
    slots = [ROWS, UNITS] + [j * STAT_STRIDE + m for j, a in enumerate(stage.aggregates)
                             if a.kind is not Kind.QUANTILE for m in range(a.raw_arity())]
    slot_ids = np.asarray(sorted(slots), dtype=np.int64)
    col_of = {sid: c for c, sid in enumerate(slot_ids.tolist())}
    stat = np.asarray(stat, dtype=np.int64)
    at = np.minimum(np.searchsorted(slot_ids, stat), len(slot_ids) - 1)
    scalar = slot_ids[at] == stat
    fast = scalar & (np.asarray(shift) == 0)
    matrix = np.zeros((G, len(slot_ids)), dtype=np.int64)
    np.add.at(matrix, (pos[fast], at[fast]), np.asarray(value)[fast])
    extra: dict[tuple[int, int], int] = {}
    slow = np.flatnonzero(~fast)
    for p, s, h, v, is_scalar in zip(pos[slow].tolist(), stat[slow].tolist(), np.asarray(shift)[slow].tolist(),
                                     np.asarray(value)[slow].tolist(), scalar[slow].tolist()):
        key = (p, col_of[s]) if is_scalar else (p, -1 - s)
        extra[key] = extra.get(key, 0) + (v << h)
    big: dict[tuple[int, int], int] = {}
    for (p, c), v in list(extra.items()):
        if c >= 0:
            big[(p, c)] = int(matrix[p, c]) + v
            del extra[(p, c)]
    quantiles: dict[int, dict[int, int]] = {}
    for (p, c), v in extra.items():
        s = -1 - c
        quantiles.setdefault(p, {})[s] = v
    rows_col, units_col = col_of[ROWS], col_of[UNITS]
    has_rows = matrix[:, rows_col] > 0
    for (p, c), v in big.items():  # 2^32 rows or more in one group: its count came in two halves
        if c == rows_col:
            has_rows[p] = v > 0
    counted = np.flatnonzero(has_rows)
    kept = matrix[counted]
    plist = counted.tolist()
    at_pos = {p: i for i, p in enumerate(plist)} if big else {}
    scalar: dict[str, list[np.ndarray]] = {}  # per aggregate: its components as columns (no per-group objects)
    cells: dict[str, list[tuple[int, ...]]] = {}
    for j, agg in enumerate(stage.aggregates):
        if agg.kind is Kind.QUANTILE:
            base, arity = j * STAT_STRIDE, agg.raw_arity()
            cells[agg.name] = [tuple(quantiles.get(p, {}).get(base + m, 0) for m in range(arity)) for p in plist]
            continue
        comps = []
        for m in range(agg.raw_arity()):
            c = col_of[j * STAT_STRIDE + m]
            col: np.ndarray = kept[:, c].copy()
            over = [(p, v) for (p, cc), v in big.items() if cc == c and has_rows[p]]
            if over:  # the Python-int slots of counted groups
                col = object_column(col.tolist())
                for p, v in over:
                    col[at_pos[p]] = v
            comps.append(col)
        scalar[agg.name] = comps
    names = [a.name for a in stage.aggregates]
    units: list[Any] | None = None
    if stage.count_units:
        units = kept[:, units_col].tolist()
        for (p, c), v in big.items():
            if c == units_col and has_rows[p]:
                units[at_pos[p]] = v
    keys = [index[p] for p in plist]
    return GroupColumns(keys, names, scalar, cells, units)

