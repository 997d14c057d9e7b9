"""FastSample's public tables by O(t) small steps equal the direct big-power formulas exactly (issue 24 §5)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpspark.noise import FastSample, bigint
from dpspark.noise import fastsample_tables
from dpspark.noise.fastsample import cdf_offsets
from dpspark.noise.fastsample_tables import batch_weights
from dpspark.rng import SeededRandom

MECHS = [
    FastSample(n=1000, epsilon="1/2", gamma="1/5"),
    FastSample(n=50, epsilon="2", gamma="1/4"),
    FastSample(n=10**5, epsilon="1", gamma="1/1000"),
    FastSample(n=10**6, epsilon="1/10", gamma="2^-40"),
    FastSample(n=10**9, epsilon="1/3", gamma="2^-70"),
    FastSample(n=5 * 10**5, exp_eps=Fraction(517, 512), gamma="2^-16"),  # epsilon/100 per step: t = 3040
]


def direct_offsets(mech: FastSample) -> list[object]:
    return [mech._mult * mech._fprime_offset(j) for j in range(-mech.t, mech.t)]


def direct_weights(mech: FastSample) -> np.ndarray:
    """The previous implementation: 2t + 2 exact big-integer floors."""
    t, d, dprime = mech.t, bigint.big(mech.d), mech._dprime
    scaled = [0] + direct_offsets(mech) + [mech._full]
    return np.array([int(((j * dprime + v) << 63) // d) for j, v in zip(range(-t - 1, t + 1), scaled)], dtype=np.int64)


@pytest.mark.parametrize("mech", MECHS, ids=lambda m: f"n={m.n},t={m.t}")
def test_tables_equal_the_direct_formulas(mech: FastSample) -> None:
    assert mech.fallback is None
    assert cdf_offsets(mech.p, mech.q, mech.t, mech._mult) == direct_offsets(mech)
    assert np.array_equal(batch_weights(mech.p, mech.q, mech.t, mech.g, mech.n), direct_weights(mech))


def test_the_undecided_fallback_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """With almost no guard bits most entries straddle an integer and take the exact fallback: still equal."""
    mech = MECHS[0]
    calls = []
    real = fastsample_tables._direct_weight
    monkeypatch.setattr(fastsample_tables, "GUARD_BITS", -70)
    monkeypatch.setattr(fastsample_tables, "_direct_weight", lambda *a: calls.append(a) or real(*a))
    assert np.array_equal(batch_weights(mech.p, mech.q, mech.t, mech.g, mech.n), direct_weights(mech))
    assert len(calls) > mech.t  # the fallback really ran


def test_the_comparison_catches_a_wrong_recurrence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: the bracket's slack dropped at low precision (floors taken from the approximation) differs."""
    mech = MECHS[3]
    monkeypatch.setattr(fastsample_tables, "GUARD_BITS", -70)
    monkeypatch.setattr(fastsample_tables, "_direct_weight", lambda j, *a: -1)  # a mutant that trusts lo
    assert not np.array_equal(batch_weights(mech.p, mech.q, mech.t, mech.g, mech.n), direct_weights(mech))


def test_draws_need_no_scalar_table_and_accuracy_memo_is_exact() -> None:
    mech = FastSample(n=5 * 10**5, exp_eps=Fraction(517, 512), gamma="2^-16")
    counts = np.arange(0, mech.n + 1, 997, dtype=np.int64)
    out = mech.draw_many(counts, SeededRandom(b"tables"))
    assert mech._table_cache is None  # the batched path never built the t-entry big-integer table
    scalar = FastSample(n=mech.n, exp_eps=mech.exp_eps, gamma="2^-16")
    rng = SeededRandom(b"tables")
    assert out.tolist() == [scalar.draw(int(c), rng) for c in counts]  # same stream, same outputs
    assert scalar._table_cache is not None  # scalar draws build the table
    with_table = scalar.accuracy("1/20")
    memo = FastSample(n=mech.n, exp_eps=mech.exp_eps, gamma="2^-16")
    assert memo.accuracy("1/20") == with_table and memo.accuracy("1/1000") == scalar.accuracy("1/1000")
    assert memo._table_cache is None  # accuracy() memoises the offsets it needs instead of building the table
    assert memo._offset_memo is None  # the memo does not outlive the public computation
    forced = FastSample(n=mech.n, exp_eps=mech.exp_eps, gamma="2^-16")
    forced._table = None  # the direct formula everywhere (test hook): same accuracy
    assert forced.accuracy("1/20") == with_table
