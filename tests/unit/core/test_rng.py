"""The randomness interface: exact power-of-two draws, bounded bias, no reuse across fork."""

import os
from collections import Counter
from fractions import Fraction

import pytest

import numpy as np

from dpspark.rng import (
    DEFAULT_LAMBDA,
    PREFIX_BITS,
    RandomSource,
    SeededRandom,
    SystemRandom,
    bias_epsilon,
    default_source,
    multiply_shift_preimages,
)


def test_sources_implement_the_interface() -> None:
    assert isinstance(SystemRandom(), RandomSource)
    assert isinstance(SeededRandom(1), RandomSource)
    assert isinstance(default_source(), SystemRandom)


@pytest.mark.parametrize("src", [SystemRandom(), SeededRandom(b"x")])
def test_bits_and_uniform_ranges(src: RandomSource) -> None:
    for k in (0, 1, 7, 8, 9, 64, 1000):
        for _ in range(50):
            assert 0 <= src.bits(k) < (1 << k) or k == 0
    for n in (1, 2, 3, 5, 16, 1000, 2**300 + 7):
        for _ in range(50):
            assert 1 <= src.uniform(n) <= n


def test_uniform_rejects_bad_bounds() -> None:
    src = SeededRandom(0)
    for bad in (0, -3, True, 2.0):
        with pytest.raises(ValueError):
            src.uniform(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        src.bits(-1)


def test_seeded_is_deterministic_and_seed_sensitive() -> None:
    a = [SeededRandom("s").uniform(10**40) for _ in range(1)] + [SeededRandom("s").bits(100)]
    b = [SeededRandom("s").uniform(10**40) for _ in range(1)] + [SeededRandom("s").bits(100)]
    assert a == b
    assert SeededRandom("s").bits(128) != SeededRandom("t").bits(128)
    s = SeededRandom(5)
    assert s.bits(256) != s.bits(256)  # the stream advances


def test_power_of_two_draws_are_unbiased_and_counted() -> None:
    src = SeededRandom(1)
    src.uniform(1024)
    assert src.biased_draws == 0
    src.uniform(1000)
    src.uniform(2**4000 + 1)
    assert src.biased_draws == 2


def _ratios(n: int, L: int, reduce) -> tuple[Fraction, Fraction]:  # type: ignore[no-untyped-def]
    """min and max over v of Pr[v] * n, enumerating every X in [0, 2^L)."""
    hits = Counter(reduce(x) for x in range(1 << L))
    assert set(hits) <= set(range(n))
    return Fraction(min(hits.get(v, 0) for v in range(n)) * n, 1 << L), Fraction(max(hits.values()) * n, 1 << L)


@pytest.mark.parametrize("n", [3, 5, 6, 7, 11, 100, 255, 1000])
@pytest.mark.parametrize("lam", [1, 2, 3, 5, 8])
def test_multiply_shift_bias_by_enumerating_every_x(n: int, lam: int) -> None:
    # The derivation in dpspark.rng.multiply_shift_preimages: Pr[v] n in [1 - n/2^L, 1 + n/2^L]
    # with n/2^L < 2^-lam for L = bitlen(n) + lam. Checked exactly at every v, for every X.
    L = n.bit_length() + lam
    hits = Counter((x * n) >> L for x in range(1 << L))
    assert sorted(hits) == list(range(n))
    for v in range(n):
        assert hits[v] == multiply_shift_preimages(n, L, v) in ((1 << L) // n, -(-(1 << L) // n))
    lo, hi = _ratios(n, L, lambda x: (x * n) >> L)
    a = Fraction(1, 1 << lam)
    assert 1 - a < lo <= 1 <= hi < 1 + a


def test_the_enumeration_catches_a_reduction_with_too_few_bits() -> None:
    # mutant: the multiply-shift applied to only bitlen(n) + lam - 3 random bits
    n, lam = 100, 5
    L = n.bit_length() + lam
    lo, hi = _ratios(n, L - 3, lambda x: (x * n) >> (L - 3))
    a = Fraction(1, 1 << lam)
    assert not (1 - a < lo and hi < 1 + a)


@pytest.mark.parametrize("n", [3, 5, 1000, 2**61 - 1, 3**200, 2**4000 + 1])
def test_multiply_shift_bias_is_within_two_to_minus_lambda(n: int) -> None:
    # Preimage counts are floor(2^L/n) or ceil(2^L/n) (checked at a spread of v); both ratios to 1/n exactly.
    lam = DEFAULT_LAMBDA
    L = n.bit_length() + lam
    q, r = divmod(1 << L, n)
    for v in {0, 1, n // 3, n // 2, n - 2, n - 1}:
        assert multiply_shift_preimages(n, L, v) in (q, q + (1 if r else 0))
    lo = Fraction(q * n, 1 << L)
    hi = Fraction((q + (1 if r else 0)) * n, 1 << L)
    a = Fraction(1, 1 << lam)
    assert 1 - a <= lo <= 1 <= hi <= 1 + a
    # and the stated epsilon charge covers ln((1+a)/(1-a)) (checked via (1+a)/(1-a) <= e^(4a) > 1+4a)
    assert (1 + a) / (1 - a) <= 1 + bias_epsilon(1, lam) + bias_epsilon(1, lam) ** 2


@pytest.mark.parametrize("n", [3, 1000, 2**61 - 1, 3**200, 2**4000 + 1, 1024, 2**70])
def test_uniform_is_the_multiply_shift_of_the_stream_bits(n: int) -> None:
    a, b = SeededRandom(b"ms"), SeededRandom(b"ms")
    L = b.uniform_bits(n)
    for _ in range(5):
        assert a.uniform(n) == ((b.bits(L) * n) >> L) + 1
        assert int(a.uniform_mpz(n)) == ((b.bits(L) * n) >> L) + 1


@pytest.mark.parametrize("n", [1, 2, 1024, 2**70, 3, 1000, 3**200, 2**4000 + 1])
def test_lazy_uniforms_follow_the_seeded_stream(n: int) -> None:
    a, b = SeededRandom(b"lazy"), SeededRandom(b"lazy")
    batch = b.lazy_uniforms(n, 9)
    expected = [a.uniform(n) for _ in range(9)]
    assert len(batch) == 9 and [int(batch.exact(i)) for i in range(9)] == expected
    assert a._counter == b._counter and a.biased_draws == b.biased_draws
    L = a.uniform_bits(n)
    again = SeededRandom(b"lazy")
    xs = [again.bits(L) for _ in range(9)]
    tops = [x >> (L - PREFIX_BITS) if L >= PREFIX_BITS else x << (PREFIX_BITS - L) for x in xs]
    assert batch.top.dtype == np.int64 and batch.top.tolist() == tops


@pytest.mark.parametrize("n", [3, 1000, 1024, 2**62 + 1, 3**200])
def test_system_lazy_uniforms_are_consistent(n: int) -> None:
    src = SystemRandom()
    batch = src.lazy_uniforms(n, 50)
    for i in range(50):
        u = int(batch.exact(i))
        assert u == int(batch.exact(i)) and 1 <= u <= n
        top = int(batch.top[i])
        assert 0 <= top < 1 << PREFIX_BITS
        # X/2^L in [top, top+1)/2^63, so u - 1 = floor(X n / 2^L) lies between these
        assert (top * n) >> PREFIX_BITS <= u - 1 <= ((top + 1) * n) >> PREFIX_BITS
    with pytest.raises(ValueError):
        src.lazy_uniforms(0, 3)


def test_bias_epsilon_exact() -> None:
    assert bias_epsilon(3, 128) == Fraction(12, 2**128)
    with pytest.raises(ValueError):
        bias_epsilon(-1)


def test_small_uniform_is_close_to_uniform() -> None:
    # chi-square with 4 dof at false-alarm 1e-6: critical value 33.4 (see tests/support/chisq.py)
    from tests.support.chisq import chi2_critical

    src = SystemRandom()
    counts = Counter(src.uniform(5) for _ in range(20000))
    stat = sum((counts[k] - 4000) ** 2 / 4000 for k in range(1, 6))
    assert stat < chi2_critical(4, 1e-6)


def test_system_random_never_shares_bytes_across_fork() -> None:
    src = SystemRandom()
    src.bits(8)  # fill the buffer
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        os.write(w, src.bits(256).to_bytes(32, "big"))
        os._exit(0)
    os.close(w)
    child = int.from_bytes(os.read(r, 32), "big")
    os.waitpid(pid, 0)
    assert child != src.bits(256)


def test_lambda_must_be_large() -> None:
    with pytest.raises(ValueError, match="lam"):
        SystemRandom(lam=8)
