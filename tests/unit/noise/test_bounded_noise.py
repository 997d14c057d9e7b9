"""The discrete DK bounded noise: exact implemented law, strict-time sampler, certified table, float mutant."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import pytest

from dpspark.noise.bounded import BoundedNoise, BoundedNoiseError
from dpspark.rng import SeededRandom


@pytest.mark.parametrize("family", ["p1", "p2"])
@pytest.mark.parametrize("M", [2, 3, 5, 9])
def test_sampler_law_is_the_table_law_exactly(family: str, M: int) -> None:
    """Every u in [1, d] is enumerated: the sampler's law equals pmf() exactly, and |noise| < M always."""
    noise = BoundedNoise(M, family, bits=10)
    counts = Counter(noise.sample(u) for u in range(1, noise.d + 1))
    pmf = noise.pmf()
    assert sum(pmf.values()) == 1
    assert {j: Fraction(c, noise.d) for j, c in counts.items()} == {j: q for j, q in pmf.items() if q}
    assert all(abs(j) <= M - 1 for j in counts)  # the probability-1 error bound, on the whole support
    assert all(pmf[j] == pmf[-j] for j in pmf)  # symmetric by construction
    for z in range(-M, M):
        assert noise.scaled_cdf(z) == sum(c for j, c in counts.items() if j <= z)


def test_pmf_follows_exp_minus_f() -> None:
    """Weights are floor-rounded 2^(b+1) exp(1 - f(j/M)) / C: w_a / w_0 matches exp(f(0) - f(a/M))."""
    M, noise = 40, BoundedNoise(40, "p2", bits=80)
    w = noise.half_weights()
    for a in range(1, M - 5):
        f = (M * M / (M * M - a * a)) ** 2  # report (test tolerance only)
        assert math.isclose(w[a] / w[0], math.exp(1 - f), rel_tol=1e-9)  # report


def test_strict_time_fixed_lookups() -> None:
    """Each sample reads the table exactly bit_length(M) times, whatever u is."""
    noise = BoundedNoise(37, "p2", bits=40)

    class Counting(bytes):
        reads = 0

        def __getitem__(self, item):  # type: ignore[override]
            Counting.reads += 1
            return bytes.__getitem__(self, item)

    noise._buf = Counting(noise._buf)
    for u in (1, 2, noise.d // 3, noise.d // 2, noise.d - 1, noise.d):
        Counting.reads = 0
        noise.sample(u)
        assert Counting.reads == noise.rounds == 6


def test_draw_uses_exact_power_of_two_uniform() -> None:
    noise = BoundedNoise(50, "p2", bits=64)
    rng = SeededRandom(12)
    xs = noise.draw_many(2000, rng)
    assert rng.biased_draws == 0  # d is a power of two: no lambda-bit bias to account for
    assert all(abs(x) <= 49 for x in xs)
    assert abs(sum(xs)) < 2000 * 50  # sanity
    assert len(set(xs)) > 20


def test_table_verifies_and_float_table_is_caught() -> None:
    """verify_table() recomputes certified entries; a table built with float64 exp is flagged."""
    M, bits = 64, 90
    honest = BoundedNoise(M, "p2", bits)
    honest.verify_table()
    # mutant: the same construction in floating point
    c = [math.exp(1 - (M * M / (M * M - a * a)) ** 2) for a in range(M)]  # report (the mutant itself)
    C = c[0] + 2 * sum(c[1:])  # report
    head, table = 0.0, []
    for a in range(M - 1):
        head += c[a] * (1 if a == 0 else 2)  # report
        table.append(int(head / C * 2**bits))  # report
    table.append(1 << bits)
    mutant = BoundedNoise.from_table(M, "p2", bits, table)
    with pytest.raises(BoundedNoiseError, match="certified interval"):
        mutant.verify_table()


@pytest.mark.parametrize("family", ["p1", "p2"])
def test_each_weight_within_its_certified_interval_and_float_pmf_is_caught(family: str) -> None:
    """|w_a - kappa c_a| < 2 (an arb ball per weight) holds for the table; a float64 pmf fails it."""
    M, bits = 300, 100
    honest = BoundedNoise(M, family, bits)
    honest.verify_weights()
    p = honest.p
    c = [math.exp(1 - (M * M / (M * M - a * a)) ** p) for a in range(M)]  # report (the mutant itself)
    C = c[0] + 2 * sum(c[1:])  # report
    w = [2**(bits + 1) * x / C for x in c]  # report: float64 weights, then the same integer table
    table, head = [], w[0] / 2  # report
    for a in range(M - 1):
        if a:
            head += w[a]  # report
        table.append(min(int(head), 1 << bits))  # report
    table.append(1 << bits)
    mutant = BoundedNoise.from_table(M, family, bits, table)
    with pytest.raises(BoundedNoiseError, match="weight .* outside its certified interval"):
        mutant.verify_weights()
    # one stored CDF entry off by 3 moves two weights by 3: caught
    t = honest.table()
    t[M // 2] += 3
    with pytest.raises(BoundedNoiseError, match=f"weight {M // 2} is outside"):
        BoundedNoise.from_table(M, family, bits, t).verify_weights()


def test_rejects_bad_parameters() -> None:
    with pytest.raises(BoundedNoiseError):
        BoundedNoise(1)
    with pytest.raises(BoundedNoiseError):
        BoundedNoise(10, "p3")
    with pytest.raises(BoundedNoiseError):
        BoundedNoise((1 << 24) + 1)
    with pytest.raises(BoundedNoiseError):
        BoundedNoise(5, bits=10).sample(0)
