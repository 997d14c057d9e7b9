"""Chi-square goodness of fit of the discrete Gaussian's draws against its certified pmf.

Draws come from the real CSPRNG (SystemRandom) through the vectorised
``draw_many``. Bins are contiguous ranges of outputs with exact mass (from the
integer weights) of about 1/30 each. Each test function runs one chi-square
test at false-alarm rate 1e-6 (critical value from tests/support/chisq.py). The same
test must reject samplers whose sigma is 10% larger or smaller (seeded, so the
power check is reproducible; its expected statistic is checked to sit far
above the critical value).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpspark.noise import DiscreteGaussian
from dpspark.rng import SeededRandom, SystemRandom
from tests.support.chisq import chi2_critical

FALSE_ALARM = 1e-6
DRAWS = 20_000


def bins_of(reference: DiscreteGaussian, target: float = 1 / 30) -> list[tuple[int, float]]:
    """(upper edge, exact mass as float) of contiguous output ranges covering [-R, R]."""
    out: list[tuple[int, float]] = []
    acc = Fraction(0)
    for y in range(-reference.R, reference.R + 1):
        acc += Fraction(reference.weight(y), reference.d)
        if acc >= target:
            out.append((y, float(acc)))  # analysis only
            acc = Fraction(0)
    if acc:
        y_last, mass = out.pop()
        out.append((reference.R, mass + float(acc)))  # analysis only
    return out


def chi_square(sample: np.ndarray, reference: DiscreteGaussian) -> tuple[float, float]:
    """(statistic, critical value at FALSE_ALARM) of ``sample`` against the reference's exact bin masses."""
    bins = bins_of(reference)
    edges = np.array([e for e, _ in bins])
    index = np.minimum(np.searchsorted(edges, sample, side="left"), len(bins) - 1)  # outputs past R: last bin
    observed = np.bincount(index, minlength=len(bins))
    expected = np.array([p for _, p in bins]) * len(sample)
    stat = float(((observed - expected) ** 2 / expected).sum())  # analysis only
    return stat, chi2_critical(len(bins) - 1, FALSE_ALARM)


def binned_chi2_distance(truth: DiscreteGaussian, reference: DiscreteGaussian) -> float:
    """sum (p' - p)^2 / p over the reference's bins: the expected statistic is ~ DRAWS times this."""
    bins = bins_of(reference)
    total, lo = 0.0, -reference.R
    for hi, p in bins:
        pt = float(sum(Fraction(truth.weight(y), truth.d) for y in range(max(lo, -truth.R), min(hi, truth.R) + 1)))
        total += (pt - p) ** 2 / p  # analysis only
        lo = hi + 1
    return total


@pytest.mark.parametrize("sigma", ["3", "25/2"])
def test_draws_match_certified_pmf(sigma: str) -> None:
    mech = DiscreteGaussian(sigma=sigma)
    stat, crit = chi_square(mech.draw_many(DRAWS, SystemRandom()), mech)
    assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f} (false-alarm rate {FALSE_ALARM})"


@pytest.mark.parametrize("factor", [Fraction(11, 10), Fraction(9, 10)])
def test_rejects_sigma_off_by_ten_percent(factor: Fraction) -> None:
    reference = DiscreteGaussian(sigma="3")
    wrong = DiscreteGaussian(sigma=3 * factor, data_radius=0)
    assert DRAWS * binned_chi2_distance(wrong, reference) > 3 * chi2_critical(len(bins_of(reference)) - 1, FALSE_ALARM)
    stat, crit = chi_square(wrong.draw_many(DRAWS, SeededRandom(f"mutant-{factor}")), reference)
    assert stat > crit, f"sigma x {factor} not rejected: {stat:.1f} <= {crit:.1f}"
