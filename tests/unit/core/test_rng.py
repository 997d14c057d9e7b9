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
    uniform_many,
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


# bounds with every shape: 1 (no bits), powers of two (exact), odd, just above/below 2^63 and 2^64 itself
BATCH_BOUNDS = [1, 2, 3, 5, 8, 17, 1000, 1024, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 3, 2**64 - 1, 2**64]


def _per_draw(src: SeededRandom, n: int, count: int, descending: bool) -> list[int]:
    return [src.uniform(n - i if descending else n) - 1 for i in range(count)]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", BATCH_BOUNDS)
def test_uniform_many_is_the_seeded_per_draw_stream(n: int, descending: bool) -> None:
    """Same blocks, same values as count calls of uniform(n_i), minus one; the stream and bias count continue equal."""
    count = min(n, 40) if descending else 40  # descending from 17 or 8 crosses powers of two (exact draws)
    a, b = SeededRandom(b"many"), SeededRandom(b"many")
    got = a.uniform_many(n, count, descending=descending)
    assert got.dtype == np.uint64 and got.tolist() == _per_draw(b, n, count, descending)
    assert a._counter == b._counter and a.biased_draws == b.biased_draws
    assert a.uniform(999) == b.uniform(999)
    assert uniform_many(SeededRandom(b"many"), n, count, descending=descending).tolist() == got.tolist()


def test_uniform_many_without_the_batch_method_calls_uniform() -> None:
    """A source with only bits/uniform (tests' enumerating sources) gets one uniform call per draw."""

    class Plain:
        name, lam = "plain", 128

        def __init__(self) -> None:
            self.inner = SeededRandom(b"plain")

        def bits(self, k: int) -> int:
            return self.inner.bits(k)

        def uniform(self, n: int) -> int:
            return self.inner.uniform(n)

    assert uniform_many(Plain(), 1000, 30, descending=True).tolist() == _per_draw(SeededRandom(b"plain"), 1000, 30, True)
    assert uniform_many(Plain(), 2**64, 3).tolist() == _per_draw(SeededRandom(b"plain"), 2**64, 3, False)


def _mutant_uniform_many(old: str, new: str):  # type: ignore[no-untyped-def]
    """``_ByteSource.uniform_many`` with one source line changed."""
    from dpspark import rng as rng_module
    from tests.support.mutants import mutated

    return mutated(rng_module, "_ByteSource.uniform_many", old, new)["uniform_many"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("[(x * m) >> L for x in xs]", "[((x * m) >> L) + 1 for x in xs]"),  # the range shifted to [1, n]
        ("(x * (m - i)) >> L", "(x * (m - i - 1)) >> L"),  # descending one bound too low
        ("m.bit_length() - 1, run", "m.bit_length(), run"),  # a power of two drawn on one bit too many
        ("self.biased_draws += run", "self.biased_draws += 1"),  # the bias count (the epsilon's) short
    ],
)
def test_uniform_many_mutants_are_caught(old: str, new: str) -> None:
    mutant = _mutant_uniform_many(old, new)
    caught = 0
    for n in BATCH_BOUNDS:
        for descending in (False, True):
            count = min(n, 40) if descending else 40
            ref, src = SeededRandom(b"mut"), SeededRandom(b"mut")
            want = _per_draw(ref, n, count, descending)
            try:
                got = mutant(src, n, count, descending=descending).tolist()
                caught += got != want or src.biased_draws != ref.biased_draws
            except OverflowError:  # 2^64 pushed out of uint64: caught too
                caught += 1
    assert caught > 0


@pytest.mark.parametrize("n", [6, 2**64 - 3, 2**64])
def test_system_uniform_many_range_and_law(n: int) -> None:
    """SystemRandom's one-read batch: values in [0, n_i), and at n = 6 each value's frequency within 5.5 sd.

    60,000 draws: each count is Binomial(60000, 1/6) up to a 2^-64 relative bias, sd ~ 91.3; a cell beyond
    5.5 sd has probability < 4e-8, so the six cells false-alarm below 1e-6. A variant that drops or doubles a
    value (a range shift, a wrong multiplier) moves some cell by ~10,000.
    """
    src = SystemRandom()
    before = src.biased_draws
    flat = src.uniform_many(n, 60_000 if n == 6 else 2_000)
    assert int(flat.max()) <= n - 1
    assert src.biased_draws - before == (0 if n == 2**64 else len(flat))
    down = src.uniform_many(n, min(n, 50), descending=True)
    assert all(int(v) < n - i for i, v in enumerate(down))
    if n == 6:
        cells = np.bincount(flat.astype(np.int64), minlength=6)
        assert len(cells) == 6 and all(abs(int(c) - 10_000) <= 502 for c in cells)  # 5.5 sd = 502.1
    with pytest.raises(ValueError):
        src.uniform_many(2**64 + 1, 1)
    with pytest.raises(ValueError):
        src.uniform_many(5, 6, descending=True)


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
