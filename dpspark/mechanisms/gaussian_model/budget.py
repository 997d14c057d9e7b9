"""The public budget splits of the Gaussian releases (one place: the mechanisms and the sample size read them)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class BudgetSplit:
    """A release's public split of rho: the single count, the coarse mean, the covariance passes (rounds
    and final; :func:`~dpspark.mechanisms.gaussian_model.covariance.round_rhos`); the rest to the mean."""

    count: Fraction
    coarse: Fraction
    covariance: Fraction

    def parts(self, rho: Fraction) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        """(count, coarse mean, covariance, mean) rho; they add up to rho exactly."""
        count, coarse, cov = rho * self.count, rho * self.coarse, rho * self.covariance
        return count, coarse, cov, rho - count - coarse - cov


#: the share of each covariance pass's rho spent on its noisy count of clipped rows (the matrix gets the rest;
#: :mod:`~dpspark.mechanisms.gaussian_model.clipping`)
CLIP_SHARE = Fraction(1, 10)

SPLITS = {
    "gaussian_covariance": BudgetSplit(Fraction(1, 50), Fraction(1, 16), 1 - Fraction(1, 50) - Fraction(1, 16)),
    "gaussian_mean": BudgetSplit(Fraction(1, 50), Fraction(1, 16), Fraction(3, 8)),
    "gaussian_mean_known": BudgetSplit(Fraction(1, 50), Fraction(1, 8), Fraction(0)),
    "gaussian_learner": BudgetSplit(Fraction(1, 50), Fraction(1, 16), Fraction(1, 2)),
}
