"""LazyBits: same value and same seeded stream use as rng.bits(k); the low bits are read only on demand."""

from __future__ import annotations

import pytest

from dpspark.mechanisms.histogram.lazy_bits import LEVEL_TOP_BITS, LazyBits, draw_lazy_bits, draw_level_uniform
from dpspark.rng import SeededRandom, SystemRandom


@pytest.mark.parametrize("k", [256, 257, 263, 1000, 4097, 65_543])
def test_seeded_value_and_stream_match_bits(k: int) -> None:
    for seed in range(3):
        eager, lazy = SeededRandom(seed), SeededRandom(seed)
        before = [eager.bits(77), eager.uniform(1000)]
        assert before == [lazy.bits(77), lazy.uniform(1000)]
        want = eager.bits(k)
        got = draw_lazy_bits(lazy, k, 256)
        assert got.top == want >> (k - 256) and not got.materialized
        # later draws line up whether or not the low bits are ever read
        assert eager.bits(99) == lazy.bits(99)
        assert got.value() == want and got.materialized


def test_mutant_reading_a_fresh_block_for_the_low_bits_is_caught() -> None:
    """The identity check has teeth: reading the low bits from the next block gives another value."""
    eager, lazy = SeededRandom(7), SeededRandom(7)
    want = eager.bits(5000)
    top = lazy.bits(256)
    assert (top << (5000 - 256)) | lazy.bits(5000 - 256) != want


def test_system_random_value_is_consistent() -> None:
    rng = SystemRandom()
    for k in (256, 300, 10_000):
        x = draw_lazy_bits(rng, k, 256)
        assert 0 <= x.top < 1 << 256 and not x.materialized
        v = x.value()
        assert 0 <= v < 1 << k and v >> (k - 256) == x.top and x.value() == v


def test_other_sources_are_read_eagerly_in_one_draw() -> None:
    class Recorder:
        name, lam = "recorder", 128

        def __init__(self) -> None:
            self.calls: list[int] = []

        def bits(self, k: int) -> int:
            self.calls.append(k)
            return (1 << k) - 3

        def uniform(self, n: int) -> int:
            raise AssertionError("not used")

    rec = Recorder()
    x = draw_level_uniform(rec, 1000)  # type: ignore[arg-type]
    assert rec.calls == [1000] and x.materialized and x.value() == (1 << 1000) - 3
    small = draw_level_uniform(rec, 40)  # type: ignore[arg-type]
    assert rec.calls == [1000, 40] and small.top_bits == 40 and small.top == small.value()
    assert draw_level_uniform(SeededRandom(1), 300).top_bits == LEVEL_TOP_BITS


def test_errors() -> None:
    with pytest.raises(ValueError):
        draw_lazy_bits(SeededRandom(0), 300, 100)  # not a multiple of 8
    with pytest.raises(ValueError):
        draw_lazy_bits(SeededRandom(0), 200, 256)
    with pytest.raises(ValueError):
        LazyBits.from_int(1 << 10, 10, 8)
