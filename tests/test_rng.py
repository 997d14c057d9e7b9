"""The randomness interface: exact power-of-two draws, bounded bias, no reuse across fork."""

import os
from collections import Counter
from fractions import Fraction

import pytest

from dpspark.rng import DEFAULT_LAMBDA, RandomSource, SeededRandom, SystemRandom, bias_epsilon, default_source


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


@pytest.mark.parametrize("n", [3, 5, 1000, 2**61 - 1, 3**200])
def test_mod_reduction_bias_is_within_two_to_minus_lambda(n: int) -> None:
    # uniform() draws b = bitlen(n) + lam bits and reduces mod n: residues get
    # floor(2^b/n) or ceil(2^b/n) preimages. Check both ratios to 1/n exactly.
    lam = DEFAULT_LAMBDA
    b = n.bit_length() + lam
    q, r = divmod(1 << b, n)
    lo = Fraction(q * n, 1 << b)
    hi = Fraction((q + (1 if r else 0)) * n, 1 << b)
    a = Fraction(1, 1 << lam)
    assert 1 - a <= lo <= 1 <= hi <= 1 + a
    # and the stated epsilon charge covers ln((1+a)/(1-a)) (checked via (1+a)/(1-a) <= e^(4a) > 1+4a)
    assert (1 + a) / (1 - a) <= 1 + bias_epsilon(1, lam) + bias_epsilon(1, lam) ** 2


def test_bias_epsilon_exact() -> None:
    assert bias_epsilon(3, 128) == Fraction(12, 2**128)
    with pytest.raises(ValueError):
        bias_epsilon(-1)


def test_small_uniform_is_close_to_uniform() -> None:
    # chi-square with 4 dof at false-alarm 1e-6: critical value 33.4 (see tests/chisq.py)
    from tests.chisq import chi2_critical

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
