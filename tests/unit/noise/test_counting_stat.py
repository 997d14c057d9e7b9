"""Large-n statistical checks of the samplers, driven by the real CSPRNG.

Each test bins M(c, U) by offset z - c, computes every bin's exact probability
from the integer scaled CDF, and runs a chi-square goodness-of-fit test; each test
function's false-alarm rate is <= 1e-6 (critical value from tests/support/chisq.py). The same test must
reject a mutant whose eps~ is 30% larger than claimed; the mutant runs on a
seeded generator so the power check is reproducible, and its expected
chi-square statistic is checked to sit far above the critical value.
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction

import pytest

from dpspark.noise import FastSample, GeoSample
from dpspark.noise.counting_base import CountingMechanism
from dpspark.rng import RandomSource, SeededRandom, SystemRandom
from tests.support.chisq import chi2_critical

#: false-alarm rate of each test function; each runs up to 3 chi-square tests (Bonferroni)
FALSE_ALARM = 1e-6
ALPHA = FALSE_ALARM / 3
DRAWS = 12_000


def offset_width(mech: CountingMechanism) -> int:
    """Half-width of the offset window: ~ln(10^4)/eps~ (analysis only), at most 400."""
    return min(400, math.ceil(math.log(1e4) / mech.epsilon_tilde))  # analysis only


def make_bins(reference: CountingMechanism, c: int, target: float = 1 / 20) -> list[tuple[int, int, float]]:
    """Contiguous output ranges [lo, hi] with exact reference mass (as float) >= ~target each."""
    width = offset_width(reference)
    cuts = sorted({max(0, min(reference.n, c + k)) for k in range(-width, width + 1)})
    bins: list[tuple[int, int, float]] = []
    lo = 0
    for hi in cuts + [reference.n]:
        if hi < lo:
            continue
        mass = reference.scaled_cdf(c, hi) - reference.scaled_cdf(c, lo - 1)
        pr = float(Fraction(mass, reference.d))  # analysis only
        if pr >= target or hi == reference.n:
            bins.append((lo, hi, pr))
            lo = hi + 1
    if len(bins) > 1 and bins[-1][2] < target:  # fold a thin last bin into its neighbour
        a, b = bins.pop(), bins.pop()
        bins.append((b[0], a[1], a[2] + b[2]))
    return bins


def chi_square(mech: CountingMechanism, reference: CountingMechanism, c: int, rng: RandomSource, draws: int) -> tuple[float, float]:
    """Chi-square of ``mech``'s draws against ``reference``'s exact bin masses; returns (stat, critical)."""
    bins = make_bins(reference, c)
    starts = [lo for lo, _, _ in bins]
    observed = [0] * len(bins)
    for _ in range(draws):
        observed[bisect.bisect_right(starts, mech.draw(c, rng)) - 1] += 1
    stat = sum((o - pr * draws) ** 2 / (pr * draws) for o, (_, _, pr) in zip(observed, bins))
    return stat, chi2_critical(len(bins) - 1, ALPHA)


LARGE = [
    FastSample(n=10**9, epsilon="1/10", gamma="2^-70"),
    FastSample(n=10**6, epsilon="1", gamma="1/1000"),
    FastSample(n=10**6, epsilon="2", gamma="1/4"),
    GeoSample(n=500, epsilon="1/2"),
]


@pytest.mark.parametrize("mech", LARGE, ids=lambda m: f"{m.name}-n{m.n}-{m.exp_eps}")
def test_sampler_matches_exact_pmf_chi_square(mech: CountingMechanism) -> None:
    for c in (0, mech.n // 2, mech.n):
        stat, crit = chi_square(mech, mech, c, SystemRandom(), DRAWS)
        assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f} at c={c} (per-test false-alarm rate {FALSE_ALARM})"


def mutant_30_percent(mech: FastSample) -> FastSample:
    """The same mechanism, but running at eps~ * 1.3 (a rational close to (p/q)^1.3)."""
    bigger = Fraction(math.exp(1.3 * math.log(mech.exp_eps))).limit_denominator(10**6)  # mutant construction
    return FastSample(n=mech.n, exp_eps=bigger, gamma=mech.gamma)


@pytest.mark.parametrize("mech", LARGE[:3], ids=lambda m: f"{m.name}-n{m.n}-{m.exp_eps}")
def test_chi_square_rejects_an_eps_30_percent_too_large(mech: FastSample) -> None:
    mutant = mutant_30_percent(mech)
    assert mutant.exp_eps > mech.exp_eps
    c = mech.n // 2
    stat, crit = chi_square(mutant, mech, c, SeededRandom(b"mutant-30"), DRAWS)
    assert stat > crit
    # power: the expected statistic (draws * chi-square distance) dwarfs the critical value
    bins = make_bins(mech, c)
    p1 = [float(Fraction(mutant.scaled_cdf(c, hi) - mutant.scaled_cdf(c, lo - 1), mutant.d)) for lo, hi, _ in bins]
    noncentrality = DRAWS * sum((b - a) ** 2 / a for (_, _, a), b in zip(bins, p1))
    assert noncentrality > 4 * crit
