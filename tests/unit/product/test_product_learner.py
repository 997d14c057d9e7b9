"""Accuracy of the product learner (KLSU Alg 7, Thm 5.2): the KL / TV claim at a stated confidence.

The claim: w.p. >= 1 - beta, KL(P_A || Q_A) <= alpha^2 / 2 on A = {p_j >= 1/d} and sum_{j not in A}
|p_j - q_j| <= alpha / 4, so TV(P, Q) <= sqrt(KL_A / 2) + sum_B |p - q| <= alpha. Over T independent runs
the number of runs breaking it is dominated by Binomial(T, beta); the test fails a correct
implementation w.p. <= 1e-6 (k below is the exact 1e-6 upper quantile). MUTANT: no orientation step
(biases above 1/2 are locked at 9/16) - caught.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpspark.mechanisms.product import learner as lr
from dpspark.mechanisms.product.simulate import SimulatedCounts
from dpspark.rng import SeededRandom


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
    plan = lr.LearnerPlan.build(d, 10**9, rho, alpha, beta)
    plan = lr.LearnerPlan.build(d, plan.n_needed, rho, alpha, beta)
    assert plan.failure_bound() <= beta
    monkeypatch.setattr(lr, "_ORIENT", orient)
    gen = np.random.default_rng(4)
    fails, worst = 0, 0.0
    for t in range(T):
        run = lr.run_learner(plan, SimulatedCounts(p, plan.n, gen), SeededRandom(t))
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
