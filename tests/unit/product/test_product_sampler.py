"""Accuracy of the product sampler (RSSS Alg 4): unbiasedness lemma, last-bucket bias, the TV claim.

False-alarm rates: every statistical check below fails a correct implementation with probability
<= 1e-6 (union bounds over coordinates stated inline); each has a mutant that it catches.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import pytest

from dpspark.mechanisms.product import rounds as rd
from dpspark.mechanisms.product.sampler import SamplerPlan, run_sampler, sbar
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
    """Mean over fresh datasets of c~ / M~ for a sampling round with fixed buckets (all of p in one group)."""
    n, B = 1000, 64
    gen = np.random.default_rng(11)
    d = len(p)
    query = rd.RoundQuery(0, "sampling", tuple(range(d)), (False,) * d, d, 0, B // 2, B, count=True)
    rho = Fraction(1, 50)
    noise = rd.RoundNoise(((d, d),), (rd.group_sigma(d, d, rho, n),), rd.count_sigma(rho, n), n)
    rng = SeededRandom(5)
    acc = np.zeros(d)
    for t in range(trials):
        rows = (gen.random((n, d)) < np.array(p)).astype(np.int64)  # report: simulated data
        oracle = rd.RowsOracle(rows, range(n), t.to_bytes(16, "big"), B)
        exact = oracle(query)
        noisy, m = rd.release_round(exact, noise, rng)
        est = np.array(noisy, dtype=float)  # report
        if fold:
            est = np.array(exact[:-1], dtype=float) + np.abs(est - np.array(exact[:-1]))  # report
        acc += est / rd.positive(m)  # report
    return acc / trials, Fraction(n, 2), rd.second_moment_upper(rd.gaussian(noise.sigmas[0], n)), n


def test_unbiasedness_lemma_with_fixed_buckets() -> None:
    """E[c~ / M~] = p up to the ratio's second-order term for a fixed bucket (content-free batches, fresh data).

    Given the slice's M units, c ~ Bin(M, p) and Z are independent of the count's noise Z0, so
    E[c~/(M + Z0)] = p M E[1/(M + Z0)] = p (1 + O(sigma_0^2 / M^2)): below 1e-4 here. c/M and Z/M are bounded by
    Hoeffding and the subgaussian tail: the mean of T trials deviates by more than
    sqrt(2 (1/(4 M_min) + sigma_bar^2 / M_min^2) ln(2d/1e-6) / T) (+ 1e-4) w.p. <= 1e-6 over all d coordinates,
    M_min = 0.4 n (the slice is half of n units; below 0.4 n w.p. < 1e-9 by Chernoff). MUTANT: negative
    noise folded up (|c~ - c|) - caught.
    """
    p = [0.5, 0.2, 0.05, 0.0]
    T = 600
    for fold, expect_ok in ((False, True), (True, False)):
        mean, _, var, n = _unbiasedness_means(p, T, fold)
        m_min = 0.4 * n  # report
        t = math.sqrt(2 * (1 / (4 * m_min) + float(var) / m_min**2) * math.log(2 * len(p) / FALSE_ALARM) / T) + 1e-4  # report
        ok = bool(np.all(np.abs(mean - np.array(p)) <= t))
        assert ok == expect_ok, (fold, mean, t)


def _tv_estimate(plan: SamplerPlan, p: list[float], T: int, N: int, seed: int,
                 monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[float, float, float]:
    """(sum_j |mean Pr[y_j = 1] - p_j|, the same for the MUTANT that forgets to flip back, the slack).

    q_j is estimated by the mean over T runs of Pr[y_j = 1 | noisy counts] (in [0, 1]); by Bernstein each mean
    is within sqrt(2 v ln(2d/1e-6) / T) + 2 ln(2d/1e-6) / (3T) of q_j w.p. 1 - 1e-6/d, with
    v = max_j p_j / M_min + sigma_bar^2 / M_min^2 + (ratio) >= the variance (clipping moves towards p).
    """
    d = len(p)
    gen = np.random.default_rng(seed)
    good, mutant = np.zeros(d), np.zeros(d)
    for t in range(T):
        run = run_sampler(plan, SimulatedCounts(p, N, gen), SeededRandom(t))
        pr = np.array([float(x) for x in run.probabilities])  # report
        good += pr
        mutant += np.where(np.array(run.flips), 1 - pr, pr)  # report
    share = 1 - plan.split / plan.batches
    m_min = share * N - 6 * math.sqrt(share * N)  # report: Chernoff, off w.p. < 1e-7
    sb = max(float(sbar(s, plan.n)) for s in plan.final.star)  # report
    v = max(p) / m_min + (sb / m_min) ** 2 + 1e-6  # report
    lg = math.log(2 * d / FALSE_ALARM)  # report
    slack = d * (math.sqrt(2 * v * lg / T) + 2 * lg / (3 * T))  # report
    err = float(np.abs(good / T - np.array(p)).sum())  # report
    err_mutant = float(np.abs(mutant / T - np.array(p)).sum())  # report
    return err, err_mutant, slack


@pytest.mark.parametrize("schedule", [None, (Fraction(1, 4), 3)])
def test_tv_claim_of_the_sampler(schedule: tuple[Fraction, int] | None) -> None:
    """sum_j |E[y_j] - p_j| <= alpha at N = n_needed (d = 16, rho = 1/2, alpha = 1/10): the plan's own schedule
    (here the fallback) and a ladder schedule. MUTANT (ladder): output bits not flipped back - caught."""
    d, alpha, rho = 16, Fraction(1, 10), Fraction(1, 2)
    p = [0.5, 0.2, 1 / 16, 1e-3, 0.0, 0.9, 0.97, 0.01] * 2
    plan = SamplerPlan.build(d, 10**9, rho, alpha, enforce=False, schedule=schedule)
    plan = SamplerPlan.build(d, plan.n_needed, rho, alpha, schedule=schedule)
    assert plan.accuracy_bound() <= alpha
    err, err_mutant, slack = _tv_estimate(plan, p, 300, plan.n_needed, 2)
    assert err <= float(alpha) + slack, (err, slack)
    if schedule is not None:
        assert err_mutant > float(alpha) + slack, (err_mutant, slack)


P25 = [0.3, 0.1, 0.05, 0.5, 0.02, 0.7, 0.2, 0.01]
N25, MAX25 = 336_776, 400_000


def _per_run_tolerance(plan: SamplerPlan, run, T: int) -> list[Fraction]:  # type: ignore[no-untyped-def]
    """|Pr[y_j = 1 | counts] - p_j| <= (sqrt(2 p(1-p) M L6) + 2 L6/3 + sigma_j sqrt(2 L6) + max(p, 1-p) t0) / (M - t0)
    for every run: Bernstein on c_j given the M units of D2, the group's and the count's noise (subgaussian,
    + floor mass), and the split (M >= its Chernoff lower bound); clipping only moves towards p_j. L6 puts the
    union over T runs of these events <= 1e-6."""
    d = len(P25)
    L6 = rd.ln_upper(4 * T * (2 * d + 2) / FALSE_ALARM_F)
    last = run.rounds[-1]
    bucket = {j: r + 1 for r, members in enumerate(run.buckets) for j in members}
    sigma = {j: Fraction(g["sigma"]) for g, bs in zip(last["groups"], last["buckets"]) for j in range(d) if bucket[j] in bs}
    t0 = Fraction(last["count_sigma"]) * rd.sqrt_up(2 * L6)
    share = 1 - Fraction(plan.split, plan.batches)
    M = share * N25 - (rd.deviation(share * (1 - share), N25, L6) if share < 1 else 0)
    out = []
    for j in range(d):
        p = Fraction(P25[j]).limit_denominator(1000)
        out.append((rd.deviation(p * (1 - p), M, L6) + sigma[j] * rd.sqrt_up(2 * L6) + max(p, 1 - p) * t0) / (M - t0))
    return out


FALSE_ALARM_F = Fraction(1, 10**6)


@pytest.mark.parametrize("schedule", [None, (Fraction(3, 8), 2)])
def test_no_bias_with_fewer_units_than_max_units(monkeypatch: pytest.MonkeyPatch, schedule) -> None:  # type: ignore[no-untyped-def]
    """Issue 25: N = 336,776 units under max_units = 400,000. In every run each Pr[y_j = 1 | counts] is within
    its stated error of p_j (false alarm <= 1e-6 over all runs). MUTANT: divide by max_units (the old
    estimator) - caught, E[y_j] = 0.84 p_j (times D2's share when the plan runs a ladder)."""
    plan = SamplerPlan.build(len(P25), MAX25, Fraction(1, 2), Fraction(1, 10), enforce=False, schedule=schedule)
    T = 20
    for mutant in (False, True):
        if mutant:
            monkeypatch.setattr(rd, "positive", lambda count: MAX25)
        gen = np.random.default_rng(7)
        outside, probs = 0, []
        for t in range(T):
            run = run_sampler(plan, SimulatedCounts(P25, N25, gen), SeededRandom(t))
            tol = _per_run_tolerance(plan, run, T)
            outside += sum(abs(run.probabilities[j] - Fraction(P25[j]).limit_denominator(1000)) > tol[j]
                           for j in range(len(P25)))
            probs.append([float(x) for x in run.probabilities])  # report
        assert (outside > 0) == mutant, outside
    mean = np.mean(probs, axis=0)  # report
    unflipped = [j for j in range(len(P25)) if P25[j] < 0.5]
    share = 1 - plan.split / plan.batches  # report: the old estimator divided D2's counts by max_units
    assert abs(float(np.median(mean[unflipped] / np.array(P25)[unflipped])) - share * N25 / MAX25) < 0.02, mean  # report
