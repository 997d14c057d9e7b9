"""Accuracy of the product learner (KLSU Alg 7 with sequential rounds, Thm 5.2): the KL / TV claim and issue 25.

The claim: w.p. >= 1 - beta, KL(P_A || Q_A) <= alpha^2 / 2 on A = {p_j >= 1/d} and sum_{j not in A}
|p_j - q_j| <= alpha / 4, so TV(P, Q) <= sqrt(KL_A / 2) + sum_B |p - q| <= alpha. Over T independent runs
the number of runs breaking it is dominated by Binomial(T, beta); the test fails a correct
implementation w.p. <= 1e-6 (k below is the exact 1e-6 upper quantile). MUTANT: no orientation step
(biases above 1/2 are clamped at 9/16) - caught.

Issue 25 (max_units is an upper bound): with N = 336,776 units and max_units = 400,000, dividing by max_units
made every q about 0.84 p. Now each q_j is within its stated error of p_j (Bernstein on the count, the
noise of the final round and of the unit count, union-bounded to a false alarm <= 1e-6); MUTANT: dividing by
max_units (the old estimator) - caught, with q/p = 0.84.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpspark.mechanisms.product import learner as lr
from dpspark.mechanisms.product import rounds as rd
from dpspark.mechanisms.product.simulate import SimulatedCounts
from dpspark.rng import SeededRandom

FALSE_ALARM = Fraction(1, 10**6)


def kl_bernoulli(p: float, q: float) -> float:
    """KL(Ber(p) || Ber(q)) in nats (inf when q puts no mass where p does)."""  # report
    out = 0.0
    for a, b in ((p, q), (1 - p, 1 - q)):
        if a > 0:
            out += math.inf if b <= 0 else a * math.log(a / b)  # report
    return out


def tv_bound(p: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    """(KL over A = {p >= 1/d}, the TV bound sqrt(KL_A/2) + sum_B |p - q|)."""  # report
    d = len(p)
    a = p >= 1 / d
    kl = sum(kl_bernoulli(x, y) for x, y in zip(p[a], q[a]))  # report
    return kl, math.sqrt(kl / 2) + float(np.abs(p[~a] - q[~a]).sum())  # report


def upper_quantile(T: int, beta: Fraction, rate: float = 1e-6) -> int:
    """The smallest k with Pr[Binomial(T, beta) > k] <= rate (exact rationals)."""
    tail = Fraction(1)
    for k in range(T + 1):
        tail -= math.comb(T, k) * beta**k * (1 - beta) ** (T - k)
        if tail <= Fraction(rate):
            return k
    return T


def _failures(T: int, orient: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, float]:
    d, alpha, beta, rho = 16, Fraction(1, 4), Fraction(1, 10), Fraction(1, 2)
    p = np.array([0.5, 0.2, 1 / 16, 1 / 32, 1e-3, 0.0, 0.9, 0.97] * 2)
    plan = lr.LearnerPlan.build(d, 10**9, rho, alpha, beta, enforce=False)
    plan = lr.LearnerPlan.build(d, plan.n_needed, rho, alpha, beta)
    assert plan.failure_bound() <= beta
    monkeypatch.setattr(lr, "_ORIENT", orient)
    gen = np.random.default_rng(4)
    fails, worst = 0, 0.0
    for t in range(T):
        run = lr.run_learner(plan, SimulatedCounts(p, plan.n_needed, gen), SeededRandom(t))
        assert all(0 <= x <= 1 for x in run.q)
        kl, tv = tv_bound(p, np.array([float(x) for x in run.q]))  # report
        assert not orient or kl <= float(alpha) ** 2 / 2 or tv > float(alpha)
        fails += tv > float(alpha)
        worst = max(worst, tv)
    return fails, worst


def test_kl_claim_of_the_learner(monkeypatch: pytest.MonkeyPatch) -> None:
    T = 500
    k = upper_quantile(T, Fraction(1, 10))
    fails, worst = _failures(T, True, monkeypatch)
    assert fails <= k, (fails, k, worst)
    fails_mutant, _ = _failures(20, False, monkeypatch)
    assert fails_mutant > upper_quantile(20, Fraction(1, 10))


def test_upper_quantile() -> None:
    assert upper_quantile(10, Fraction(1, 2)) == 10
    assert 0 < upper_quantile(150, Fraction(1, 10)) < 50


# --- issue 25: fewer units than max_units -------------------------------------------------------
P25 = [0.3, 0.1, 0.05, 0.5, 0.02, 0.7, 0.2, 0.01]  # every bucket interval a coordinate can land in holds its p
N25, MAX25 = 336_776, 400_000


def _issue25_run(seed: int) -> tuple[lr.LearnerPlan, lr.LearnerRun]:
    plan = lr.LearnerPlan.build(len(P25), MAX25, Fraction(1, 2), Fraction(1, 10), Fraction(1, 10), enforce=False)
    return plan, lr.run_learner(plan, SimulatedCounts(P25, N25, np.random.default_rng(seed)), SeededRandom(seed))


def _tolerances(plan: lr.LearnerPlan, run: lr.LearnerRun) -> list[Fraction]:
    """|q_j - p_j| <= (sqrt(2 p(1-p) N L6) + 2 L6/3 + sigma_j sqrt(2 L6) + p t0) / (N - t0), t0 = sigma_0 sqrt(2 L6):
    Bernstein per coordinate, the final round's and the count's noise (subgaussian, + floor mass), and the
    ladder's draws that keep every clamp interval around p; L6 puts the union of these <= 1e-6."""
    d = len(P25)
    events = 1 + d + plan.R * d
    L6 = rd.ln_upper(4 * events / FALSE_ALARM)
    final = run.rounds[-1]
    sigma = {j: Fraction(g["sigma"]) for g, buckets in zip(final["groups"], final["buckets"])
             for j in range(d) if run.locked_in[j] in buckets}
    assert sorted(sigma) == list(range(d))
    t0 = plan.ladder.sigma0 * rd.sqrt_up(2 * L6)
    out = []
    for j in range(d):
        p = Fraction(P25[j]).limit_denominator(1000)
        out.append((rd.deviation(p * (1 - p), N25, L6) + sigma[j] * rd.sqrt_up(2 * L6) + max(p, 1 - p) * t0) / (N25 - t0))
    return out


def test_no_bias_with_fewer_units_than_max_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """N = 336,776 units, max_units = 400,000: every q_j within its stated error (false alarm <= 1e-6)."""
    fm = max(rd.floor_mass(rd.gaussian(s, MAX25)) for s in (Fraction(1), Fraction(10**4)))
    assert fm < Fraction(1, 10**9)
    plan, run = _issue25_run(25)
    tol = _tolerances(plan, run)
    q = [float(x) for x in run.q]  # report
    assert all(abs(Fraction(run.q[j]) - Fraction(P25[j]).limit_denominator(1000)) <= tol[j] for j in range(len(P25))), (q, tol)
    # MUTANT: divide by max_units (the estimator issue 25 found): q ~ 0.84 p, far outside the tolerances
    monkeypatch.setattr(rd, "positive", lambda count: MAX25)
    plan, bad = _issue25_run(25)
    ratio = [float(bad.q[j]) / P25[j] for j in range(len(P25)) if not bad.flips[j]]  # report
    assert abs(float(np.median(ratio)) - N25 / MAX25) < 0.02, ratio  # report: the issue's 0.84
    assert any(abs(Fraction(bad.q[j]) - Fraction(P25[j]).limit_denominator(1000)) > tol[j] for j in range(len(P25)))
