"""Exact tests of the k-ary sampler (RSSS Alg 3, Thm 1.4): implemented output law as rationals at small k, n."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from dpspark.noise import GeoSample
from dpspark.exact import exp_lower_bound
from dpspark.rng import DEFAULT_LAMBDA, SeededRandom
from dpspark.mechanisms.samplers import categorical
from dpspark.mechanisms.samplers.kary import (
    exact_output_law, kary_counting, kary_sample, mean_abs_noise, min_units_for, tv_bound,
)
from tests.support.chisq import chi2_critical

LAM = DEFAULT_LAMBDA


def _bias_factor(mech) -> Fraction:
    """(1 + a)/(1 - a) for the one biased uniform on the changed count's path (1 when d is a power of two)."""
    if mech.d & (mech.d - 1) == 0:
        return Fraction(1)
    a = Fraction(1, 1 << LAM)
    return (1 + a) / (1 - a)


def _count_vectors(k: int, n: int):
    return [c for c in itertools.product(range(n + 1), repeat=k) if sum(c) <= n]


def _worst_ratio(mech, k: int, n: int) -> Fraction:
    """max over add/remove neighbours (datasets of <= n units) and outputs of Pr[j | c] / Pr[j | c']."""
    laws = {c: exact_output_law(c, mech, LAM) for c in _count_vectors(k, n)}
    worst = Fraction(0)
    for c, law in laws.items():
        for j in range(k):
            nb = list(c)
            nb[j] += 1
            nb = tuple(nb)
            if nb not in laws:
                continue
            for a, b in ((law, laws[nb]), (laws[nb], law)):
                for x, y in zip(a, b):
                    assert y > 0
                    worst = max(worst, x / y)
    return worst


def test_inverse_cdf_exhaustive():
    for weights in ([1], [0, 3], [2, 0, 5], [1, 1, 1, 1, 1], [0, 0, 4, 0, 1, 0, 2]):
        cum = categorical.cumulative(weights)
        for u in range(1, sum(weights) + 1):
            want = next(j for j, s in enumerate(itertools.accumulate(weights)) if s >= u)
            assert categorical.inverse_cdf(cum, u) == want


@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 2)])
def test_privacy_exact_add_remove(eps):
    """Every output's implemented probability, neighbours under AddRemove(n): ratio <= e^{eps~} (1+a)/(1-a)."""
    k, n = 3, 3
    mech = kary_counting(n, eps)
    assert mech.exp_eps <= exp_lower_bound(eps)  # e^{eps~} <= e^eps, certified
    worst = _worst_ratio(mech, k, n)
    assert worst <= mech.exp_eps * _bias_factor(mech)
    # the stated exp_eps is a real bound on the sampler: the test would see a larger one
    assert worst > 1


def test_privacy_mutant_half_noise_scale_caught():
    """A sampler whose noise scale is halved (e^{2 eps~}) breaks the stated ratio on the exact law."""
    k, n = 3, 3
    honest = kary_counting(n, Fraction(1))
    mutant = GeoSample(n=n, exp_eps=honest.exp_eps ** 2)
    assert _worst_ratio(mutant, k, n) > honest.exp_eps * _bias_factor(honest)


def _multinomial(N: int, P: list[Fraction]):
    k = len(P)
    for c in itertools.product(range(N + 1), repeat=k):
        if sum(c) != N:
            continue
        coef = math.factorial(N)
        prob = Fraction(1)
        for cj, pj in zip(c, P):
            coef //= math.factorial(cj)
            prob *= pj ** cj
        yield c, coef * prob


def _q_law(mech, P: list[Fraction], N: int, law_fn=exact_output_law) -> list[Fraction]:
    Q = [Fraction(0)] * len(P)
    for c, w in _multinomial(N, P):
        for j, x in enumerate(law_fn(c, mech, LAM)):
            Q[j] += w * x
    return Q


def _tv(Q, P) -> Fraction:
    return sum(abs(a - b) for a, b in zip(Q, P)) / 2


CASES = [  # (k, N, eps, P)
    (2, 6, Fraction(2), [Fraction(1, 3), Fraction(2, 3)]),
    (2, 6, Fraction(2), [Fraction(1), Fraction(0)]),
    (3, 4, Fraction(3, 2), [Fraction(1, 2), Fraction(1, 2), Fraction(0)]),
]


@pytest.mark.parametrize("k,N,eps,P", CASES)
def test_tv_within_rsss_bound(k, N, eps, P):
    """d_TV(Q, P) from the exact implemented law <= k E|Z| / N (+ the rng bias over k + 1 draws)."""
    mech = kary_counting(N, eps)
    slack = Fraction(2 * (k + 1), 1 << LAM)
    tv = _tv(_q_law(mech, P, N), P)
    assert tv <= tv_bound(k, N, mech.exp_eps) + slack


def _add_one_law(c, mech, lam):
    """Mutant: add-one smoothing of the noisy counts (w_j + 1) - biased toward uniform."""
    from dpspark.mechanisms.samplers.kary import implemented_pmf

    k = len(c)
    pmfs = [implemented_pmf(mech, int(x), lam) for x in c]
    law = [Fraction(0)] * k
    for w in itertools.product(range(mech.n + 1), repeat=k):
        pw = math.prod(pmfs[j][w[j]] for j in range(k))
        law = [a + pw * b for a, b in zip(law, categorical.implemented_law([x + 1 for x in w], lam))]
    return law


def test_tv_mutant_add_one_caught():
    k, N, eps, P = 2, 6, Fraction(2), [Fraction(1), Fraction(0)]
    mech = kary_counting(N, eps)
    assert _tv(_q_law(mech, P, N, _add_one_law), P) > tv_bound(k, N, mech.exp_eps)


def test_mean_abs_noise_is_one_over_sinh():
    e = kary_counting(10, Fraction(1)).exp_eps
    assert abs(float(mean_abs_noise(e)) - 1 / math.sinh(math.log(e))) < 1e-12  # report
    # and equals the exact mean |Z| of the unclamped two-sided geometric law (partial sums converge to it)
    q = 1 / e
    partial = sum(2 * z * (1 - q) / (1 + q) * q ** z for z in range(1, 400))
    assert 0 <= mean_abs_noise(e) - partial < Fraction(1, 10**20)
    assert tv_bound(100, min_units_for(100, Fraction(1, 10), e), e) <= Fraction(1, 10)
    assert tv_bound(100, min_units_for(100, Fraction(1, 10), e) - 1, e) > Fraction(1, 10)


def test_sampler_matches_exact_law_chisq():
    """kary_sample under SeededRandom against its exact law; false-alarm rate 1e-6 (chi-square, 2 df)."""
    k, n = 3, 3
    mech = kary_counting(n, Fraction(1))
    c = (2, 1, 0)
    law = exact_output_law(c, mech, LAM)
    rng = SeededRandom("kary-chisq")
    T = 3000
    hits = [0] * k
    idx = [j for j in range(k) if c[j]]
    for _ in range(T):
        hits[kary_sample(idx, [c[j] for j in idx], k, mech, rng)] += 1
    stat = sum((h - T * float(p)) ** 2 / (T * float(p)) for h, p in zip(hits, law))  # report
    assert stat <= chi2_critical(k - 1, 1e-6)
    # a broken variant that samples the un-noised empirical law never outputs symbol 2 (count 0); its law
    # has Pr[2] = 0, so the same test would see an infinite statistic: the noise really reaches symbol 2
    assert hits[2] > 0


def test_privacy_exact_substitute():
    """Substitute(n) neighbours (one unit changes symbol: c - e_i + e_j, total n): ratio <= e^{2 eps~} bias^2."""
    k, n = 3, 3
    mech = kary_counting(n, Fraction(1))
    laws = {c: exact_output_law(c, mech, LAM) for c in _count_vectors(k, n) if sum(c) == n}
    worst = Fraction(0)
    for c, law in laws.items():
        for i, j in itertools.permutations(range(k), 2):
            nb = list(c)
            nb[i] -= 1
            nb[j] += 1
            if min(nb) < 0:
                continue
            worst = max(worst, max(x / y for x, y in zip(law, laws[tuple(nb)])))
    assert mech.exp_eps * _bias_factor(mech) < worst <= (mech.exp_eps * _bias_factor(mech)) ** 2


def _by_max_units_law(c, mech, lam):  # type: ignore[no-untyped-def]
    """MUTANT (issue 25): Pr[j] = w_j / n with n = max_units, the leftover mass spread uniformly."""
    from dpspark.mechanisms.samplers.kary import implemented_pmf

    k = len(c)
    pmfs = [implemented_pmf(mech, int(x), lam) for x in c]
    law = [Fraction(0)] * k
    for w in itertools.product(range(mech.n + 1), repeat=k):
        pw = math.prod(pmfs[j][w[j]] for j in range(k))
        share = [Fraction(min(x, mech.n), mech.n) for x in w]
        rest = max(Fraction(0), 1 - sum(share)) / k
        law = [a + pw * (b + rest) for a, b in zip(law, share)]
    return law


def test_fewer_units_than_max_units_keep_the_bound_at_n():
    """Issue 25: max_units is an upper bound. With N = 4 units under max_units = 9 the exact implemented law is
    within k E|Z| / N of P (the bound at the actual N: the draw normalises by the noisy total). MUTANT: dividing
    by max_units - caught."""
    k, N, n, eps, P = 2, 4, 9, Fraction(4), [Fraction(1, 3), Fraction(2, 3)]
    mech = kary_counting(n, eps)
    slack = Fraction(2 * (k + 1), 1 << LAM)
    assert _tv(_q_law(mech, P, N), P) <= tv_bound(k, N, mech.exp_eps) + slack
    assert _tv(_q_law(mech, P, N, _by_max_units_law), P) > tv_bound(k, N, mech.exp_eps) + slack
