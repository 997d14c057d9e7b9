"""Accuracy of the product sampler (RSSS Alg 4): unbiasedness lemma, last-bucket bias, the TV claim.

False-alarm rates: every statistical check below fails a correct implementation with probability
<= 1e-6 (union bounds over coordinates stated inline); each has a mutant that it catches.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpspark.mechanisms.product import rounds as rd
from dpspark.mechanisms.product.sampler import SamplerPlan, run_sampler
from dpspark.mechanisms.product.simulate import SimulatedCounts
from dpspark.rng import SeededRandom

FALSE_ALARM = 1e-6  # report


def test_noise_is_exactly_unbiased_up_to_the_wrap() -> None:
    """E[Z] = 0 exactly (symmetric weights); E[wrap(x + Z)] = x - m Pr[Z > R - x], below the floor mass."""
    mech = rd.gaussian(Fraction(3, 2), 30)
    pmf = mech.pmf()
    ys = range(-mech.R, mech.R + 1)
    assert sum((p * y for p, y in zip(pmf, ys)), Fraction(0)) == 0
    for x in range(0, 31):
        mean = sum((p * int(mech.wrap(x + y)) for p, y in zip(pmf, ys)), Fraction(0))
        over = sum((p for p, y in zip(pmf, ys) if y > mech.R - x), Fraction(0))
        assert mean - x == -mech.m * over
        assert abs(mean - x) <= mech.m * rd.floor_mass(mech)


def _clip_mean(mech, c: int, m: int, fold: bool = False) -> Fraction:  # type: ignore[no-untyped-def]
    pmf = mech.pmf()
    total = Fraction(0)
    for p, y in zip(pmf, range(-mech.R, mech.R + 1)):
        v = int(mech.wrap(c + y))
        v = abs(v) if fold else max(v, 0)  # fold: MUTANT that folds negative noisy counts up
        total += p * min(v, m)
    return total / m


def test_last_bucket_clipping_bias_meets_the_derived_bound() -> None:
    """For p = 0 (c = 0) and small c, E[clip(c + Z, 0, m')]/m' - c/m' <= sigma_bar / (2 m') exactly."""
    for sigma in (Fraction(3, 2), Fraction(4)):
        mech = rd.gaussian(sigma, 40)
        bound = rd.sqrt_up(rd.second_moment_upper(mech)) / 2
        for c in range(0, 6):
            bias = _clip_mean(mech, c, 1000) * 1000 - c
            assert 0 <= bias <= bound
        # MUTANT (negative noisy counts folded up, |c~|): E|Z| > sigma_bar / 2, caught at c = 0
        assert _clip_mean(mech, 0, 1000, fold=True) * 1000 > bound


def _unbiasedness_means(p: list[float], trials: int, fold: bool) -> tuple[np.ndarray, Fraction, Fraction, int]:
    """Mean over fresh datasets of c~ / m' for a sampling round with fixed buckets (all of p in one round)."""
    n, B = 1000, 64
    gen = np.random.default_rng(11)
    d = len(p)
    query = rd.RoundQuery(0, "sampling", tuple(range(d)), (False,) * d, d, 0, B // 2, B)
    m = rd.nominal_size(n, 0, B // 2, B)
    sigma = rd.noise_sigma(d, d, Fraction(1, 50), n)
    mech = rd.gaussian(sigma, n)
    rng = SeededRandom(5)
    acc = np.zeros(d)
    for t in range(trials):
        rows = (gen.random((n, d)) < np.array(p)).astype(np.int64)  # report: simulated data
        oracle = rd.RowsOracle(rows, range(n), t.to_bytes(16, "big"), B)
        noisy = np.array(rd.release_round(oracle(query), mech, rng), dtype=float)  # report
        if fold:
            noisy = np.array(oracle(query), dtype=float) + np.abs(noisy - np.array(oracle(query)))  # report
        acc += noisy / float(m)  # report
    return acc / trials, m, rd.second_moment_upper(mech), n


def test_unbiasedness_lemma_with_fixed_buckets() -> None:
    """E[c~/m'] = p for a fixed bucket (random content-free batches, fresh data).

    c is a sum of n independent terms in [0, 1] (membership x bit) and Z is sigma^2-subgaussian, so the
    mean of T trials deviates by more than sqrt(2 (n/4 + sigma_bar^2) ln(2d/1e-6) / T) / m' w.p. <= 1e-6
    over all d coordinates (Hoeffding; the implemented law's floor mass is below 2^-100).
    """
    p = [0.5, 0.2, 0.05, 0.0]
    T = 600
    for fold, expect_ok in ((False, True), (True, False)):
        mean, m, var, n = _unbiasedness_means(p, T, fold)
        t = math.sqrt(2 * (n / 4 + float(var)) * math.log(2 * len(p) / FALSE_ALARM) / T) / float(m)  # report
        ok = bool(np.all(np.abs(mean - np.array(p)) <= t))
        print(fold, mean - np.array(p), t)  # report
        assert ok == expect_ok, (fold, mean, t)


def test_tv_claim_of_the_sampler() -> None:
    """sum_j |E[y_j] - p_j| <= alpha at n = n_needed (d = 16, rho = 1/2, alpha = 1/10).

    q_j is estimated by the mean over T runs of Pr[y_j = 1 | noisy counts] (in [0, 1]); by Bernstein each
    mean is within sqrt(2 v ln(2d/1e-6) / T) + 2 ln(2d/1e-6) / (3T) of q_j w.p. 1 - 1e-6/d, with
    v = max_j p_j / m'_min + sigma_bar^2 / m'_min^2 >= E[(c~/m' - p)^2] >= Var (clipping to [0, 1] moves
    towards p). MUTANT: output bits not flipped back (RSSS's orientation undone) - caught.
    """
    d, alpha, rho = 16, Fraction(1, 10), Fraction(1, 2)
    p = [0.5, 0.2, 1 / 16, 1e-3, 0.0, 0.9, 0.97, 0.01] * 2
    plan = SamplerPlan.build(d, 10**9, rho, alpha)
    plan = SamplerPlan.build(d, plan.n_needed, rho, alpha)
    assert plan.accuracy_bound() <= alpha
    gen = np.random.default_rng(2)
    T = 500
    good, mutant = np.zeros(d), np.zeros(d)
    for t in range(T):
        run = run_sampler(plan, SimulatedCounts(p, plan.n, gen), SeededRandom(t))
        pr = np.array([float(x) for x in run.probabilities])  # report
        good += pr
        mutant += np.where(np.array(run.flips), 1 - pr, pr)  # report
    m_min = min(plan.size(i) for i in range(plan.R - 1, 2 * plan.R - 1))
    var = max(rd.second_moment_upper(rd.gaussian(s, plan.n)) for s in plan.worst_sigmas)
    v = float(Fraction(1) / m_min + var / m_min**2)  # report
    lg = math.log(2 * d / FALSE_ALARM)  # report
    slack = d * (math.sqrt(2 * v * lg / T) + 2 * lg / (3 * T))  # report
    err = float(np.abs(good / T - np.array(p)).sum())  # report
    err_mutant = float(np.abs(mutant / T - np.array(p)).sum())  # report
    print(err, err_mutant, slack)  # report
    assert err <= float(alpha) + slack, (err, slack)
    assert err_mutant > float(alpha) + slack, (err_mutant, slack)
