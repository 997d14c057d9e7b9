"""core.bound's k-rounds way (k <= PICK_ROUNDS: per-unit minima, no pair table, no sort) against its sorted way
(the pair table and the CountsStage's first_k_per_unit sort): the same kept rows and unit counts, ties included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpspark.engine.xxhash64 import hash_long
from dpspark.mechanisms.groups import core
from dpspark.mechanisms.groups.aggregates import parse_aggregates
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.universe import IntRangeUniverse

SECRET = bytes(range(16))
AGGS = parse_aggregates([{"name": "n", "kind": "count"},
                         {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "9"}])


def part(seed: int, rows: int, units: int, groups: int, width: int) -> core.Part:
    """Random rows of whole units: few distinct values (duplicate rows tie on the row hash), words of ``width``
    bytes in a shuffled (not ascending) group order."""
    rng = np.random.default_rng(seed)  # test data only
    words = np.zeros((groups, width), dtype=np.uint8)
    ints = rng.choice(1 << min(8 * width, 30), size=groups, replace=False)
    for j in range(min(width, 4)):
        words[:, width - 1 - j] = (ints >> (8 * j)) & 0xFF
    x = rng.integers(0, 3, rows).astype(np.float64)
    x[rng.random(rows) < 0.1] = np.nan
    uid = rng.integers(0, units, rows).astype(np.int64)
    return core.Part(gid=rng.integers(0, groups, rows).astype(np.int64), words=words, x={"x": x}, uid=uid,
                     units=units + 3, hash_units=lambda ids: hash_long(ids * 7 + 1))  # 3 unit ids without rows


def stage(k: int, c: int, weights: tuple[int, ...] = ()) -> GroupsStage:
    return GroupsStage(("key",), IntRangeUniverse(0, 100, "key"), "u", 10**6, k, c, AGGS, count_units=True,
                       unit_weights=weights)


def same(p: core.Part, st: GroupsStage) -> tuple[Any, Any]:
    keep_a, units_a = core._bound_rounds(p, st, SECRET)
    keep_b, units_b = core._bound_sorted(p, st, SECRET)
    assert keep_a.dtype == bool and np.array_equal(keep_a, keep_b)
    assert units_a.dtype == np.int64 and np.array_equal(units_a, units_b)
    return keep_a, units_a


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k,c", [(1, 1), (2, 3), (3, 1), (8, 2)])
@pytest.mark.parametrize("width", [2, 8, 11])
def test_rounds_equal_sorted(seed: int, k: int, c: int, width: int) -> None:
    keep, units = same(part(seed, 3000, 40, 25, width), stage(k, c))
    assert 0 < keep.sum() < 3000 and units.sum() <= 40 * k


@pytest.mark.parametrize("weights", [(5,), (7, 3), (9, 4, 1)])
def test_weighted_units_equal(weights: tuple[int, ...]) -> None:
    same(part(4, 2000, 60, 9, 8), stage(len(weights), 2, weights))


def test_hash_ties_broken_by_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """A keyed hash of 2 values: most pairs of a unit tie on it, so the word decides (both ways alike)."""
    real = core.keyed_mix
    monkeypatch.setattr(core, "keyed_mix", lambda raw, secret: real(raw, secret) & np.uint64(1))
    for k in (1, 2, 5):
        same(part(5, 1500, 30, 20, 3), stage(k, 2))


def test_mutant_reversed_word_order_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = core.keyed_mix
    monkeypatch.setattr(core, "keyed_mix", lambda raw, secret: real(raw, secret) & np.uint64(1))
    rank = core._word_rank
    monkeypatch.setattr(core, "_word_rank", lambda w: len(w) - 1 - rank(w))
    p, st = part(5, 1500, 30, 20, 3), stage(2, 2)
    assert not np.array_equal(core._bound_rounds(p, st, SECRET)[0], core._bound_sorted(p, st, SECRET)[0])


def test_empty_and_one_pair_units() -> None:
    same(part(6, 0, 5, 4, 8), stage(2, 3))
    p = part(7, 50, 50, 50, 8)
    p.uid = np.arange(50, dtype=np.int64)  # one row per unit: nothing crowded or busy, the steps still run
    keep, units = same(p, stage(1, 1))
    assert keep.all() and units.sum() == 50


def test_bound_takes_rounds_up_to_pick_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(core, "_bound_rounds", lambda *a: calls.append("rounds"))
    monkeypatch.setattr(core, "_bound_sorted", lambda *a: calls.append("sorted"))
    p = part(8, 10, 3, 3, 8)
    core.bound(p, stage(core.PICK_ROUNDS, 1), SECRET)
    core.bound(p, stage(core.PICK_ROUNDS + 1, 1), SECRET)
    assert calls == ["rounds", "sorted"]


@pytest.mark.parametrize("width", [1, 2, 8, 11, 16, 24, 32, 40])
def test_pair_pick_is_the_plain_keyed_hash(width: int) -> None:
    """The fused pick equals keyed_mix(hash_fixed(word, seed=unit hash)) for every width (fused or not)."""
    from dpspark.engine.keyed import keyed_mix
    from dpspark.engine.xxhash64 import hash_fixed

    rng = np.random.default_rng(width)  # test data only
    words = rng.integers(0, 256, (30, width)).astype(np.uint8)
    words[0] = 0
    words[1] = 255
    gid = rng.integers(0, 30, 500).astype(np.int64)
    seed = rng.integers(0, 1 << 63, 500).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    want = keyed_mix(hash_fixed(words[gid], seed=seed), SECRET).view(np.int64)
    assert np.array_equal(core.pair_pick(seed, words, gid, SECRET), want)
