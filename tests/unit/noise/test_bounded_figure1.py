"""Figure 1 points of DK: the certified Chernoff R is within 1% of the authors' public code, or below (slow)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpspark.noise.bounded_calibrate import calibrate

#: R / (sqrt(k ln(1/delta))/eps) printed by the authors' optimalNoise(pFunc2, accurate=True), measured once
#: (docs/bounded-noise.md, section 5). Keys: (k, epsilon, delta).
AUTHORS = {
    (100, '0.1', '1e-10'): 8.914870743120252,
    (1000000, '0.1', '1e-2'): 2.927171283255021,
    (1000000, '0.1', '1e-4'): 3.9773979215438864,
    (1000000, '0.1', '1e-8'): 4.6211858892510875,
    (1000000, '1', '1e-10'): 5.146000364400958,
    (1000000, '1e-2', '1e-10'): 4.481385961598773,
    (1000000, '1e-4', '1e-10'): 3.783037223717282,
    (1000000, '1e-7', '1e-10'): 2.500744927285435,
    (10000000000, '0.1', '1e-10'): 5.1275907549738875,
    (1389, '0.1', '1e-10'): 4.988478671031202,
    (19307, '0.1', '1e-10'): 4.787934444933699,
    (268270, '0.1', '1e-10'): 4.797955887058532,
    (3727594, '0.1', '1e-10'): 4.791194103993668,
    (51794747, '0.1', '1e-10'): 4.781204435813568,
    (719685673, '0.1', '1e-10'): 4.799532591301307,
}


@pytest.mark.slow
@pytest.mark.parametrize("k,eps,delta", sorted(AUTHORS))
def test_figure1_point_vs_authors(k: int, eps: str, delta: str) -> None:
    cal = calibrate(k, eps, delta)
    d = Fraction(delta)
    scale = math.sqrt(k * (math.log(d.denominator) - math.log(d.numerator))) / float(Fraction(eps))  # report
    assert cal.certified_delta <= cal.delta
    assert cal.M / scale <= 1.01 * AUTHORS[(k, eps, delta)]  # report
