"""The auditor's statistics: incomplete beta and Clopper-Pearson checked exactly, the verdict logic,
neighbour relations, events, and the sample-size planner's guarantee checked against exact binomial tails."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpspark.audit import (
    Claim,
    alpha_per_bound,
    betainc,
    check_neighbours,
    complement,
    count_at_least,
    cp_lower,
    cp_upper,
    evaluate_counts,
    key_appears,
    length_at_least,
    length_equals,
    plan_runs,
    plan_for_loss,
    released_mapping,
    value_at_least,
    value_equals,
)
from dpspark.audit.planner import detects, guaranteed_hits
from dpspark.mechanisms.histogram import basic_histogram
from dpspark.noise import GeoSample
from dpspark.rng import SeededRandom


def binom_tail_at_least(k: int, n: int, p: Fraction) -> Fraction:
    """Exact Pr[Bin(n, p) >= k]."""
    return sum((math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1)), Fraction(0))


@pytest.mark.parametrize("a,b", [(1, 1), (2, 5), (7, 3), (20, 20), (1, 40), (35, 2)])
def test_betainc_matches_exact_binomial_identity(a: int, b: int) -> None:
    # I_x(a, b) = Pr[Bin(a+b-1, x) >= a] for integer a, b
    for x in (Fraction(1, 1000), Fraction(1, 10), Fraction(1, 3), Fraction(1, 2), Fraction(9, 10), Fraction(999, 1000)):
        exact = binom_tail_at_least(a, a + b - 1, x)
        got = betainc(a, b, float(x))
        assert got == pytest.approx(float(exact), rel=1e-11, abs=1e-300)


@pytest.mark.parametrize("n,alpha", [(10, 0.05), (40, 1e-3), (60, 2.5e-7)])
def test_clopper_pearson_bounds_solve_their_defining_equations(n: int, alpha: float) -> None:
    for k in range(1, n):
        lo = cp_lower(k, n, alpha)
        hi = cp_upper(k, n, alpha)
        assert 0 < lo < k / n < hi < 1
        # Pr_lo[X >= k] = alpha and Pr_hi[X <= k] = alpha
        assert float(binom_tail_at_least(k, n, Fraction(lo))) == pytest.approx(alpha, rel=1e-9)
        assert float(1 - binom_tail_at_least(k + 1, n, Fraction(hi))) == pytest.approx(alpha, rel=1e-9)
    assert cp_lower(0, n, alpha) == 0.0 and cp_upper(n, n, alpha) == 1.0
    assert cp_upper(0, n, alpha) == pytest.approx(1 - alpha ** (1 / n), rel=1e-12)


def test_clopper_pearson_coverage_is_exact_for_every_p_on_a_grid() -> None:
    # Pr_p[lower(X) > p] <= alpha and Pr_p[upper(X) < p] <= alpha, summed exactly over X ~ Bin(n, p)
    n, alpha = 25, 0.05
    lows = [cp_lower(k, n, alpha) for k in range(n + 1)]
    highs = [cp_upper(k, n, alpha) for k in range(n + 1)]
    for i in range(1, 200):
        p = Fraction(i, 200)
        pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
        miss_low = sum((pmf[k] for k in range(n + 1) if lows[k] > p), Fraction(0))
        miss_high = sum((pmf[k] for k in range(n + 1) if highs[k] < p), Fraction(0))
        assert miss_low <= alpha and miss_high <= alpha


def test_verdict_fails_exactly_when_the_lower_loss_bound_exceeds_the_claim() -> None:
    claim = Claim.of("2")  # eps = ln 2
    alpha = alpha_per_bound(1e-6, 1)
    assert alpha == 1e-6 / 4
    # 40% vs 10%: ratio 4 > 2, decisively
    v = evaluate_counts(["E"], [4000], 10_000, [1000], 10_000, claim)
    assert not v.passed
    worst = v.worst()
    assert worst.violated and worst.direction == "D vs D'"
    assert worst.epsilon_lower == pytest.approx(math.log(worst.p_a_lower / worst.p_b_upper))
    assert math.log(2) < worst.epsilon_lower < math.log(4) == pytest.approx(worst.epsilon_point)
    assert "FAILED" in v.report() and "VIOLATION" in v.report()
    with pytest.raises(AssertionError, match="FAILED"):
        v.raise_if_failed()
    # the mirror direction is found too
    v2 = evaluate_counts(["E"], [1000], 10_000, [4000], 10_000, claim)
    assert not v2.passed and v2.worst().direction == "D' vs D"
    # 20% vs 10%: true ratio exactly at the claim, never a violation
    v3 = evaluate_counts(["E"], [2000], 10_000, [1000], 10_000, claim)
    assert v3.passed
    v3.raise_if_failed()


def test_hockey_stick_form_for_approximate_dp() -> None:
    # Pr[E|D] ~ 0.30, Pr[E|D'] = 0: with delta = 0.35 the claim holds, with delta = 0.1 it does not
    assert evaluate_counts(["E"], [3000], 10_000, [0], 10_000, Claim.of(2, "7/20")).passed
    v = evaluate_counts(["E"], [3000], 10_000, [0], 10_000, Claim.of(2, "1/10"))
    assert not v.passed
    w = v.worst()
    assert w.hockey_stick_lower > 0.1 and w.hockey_stick_lower == pytest.approx(w.p_a_lower - 2 * w.p_b_upper)
    assert w.epsilon_lower == pytest.approx(math.log((w.p_a_lower - 0.1) / w.p_b_upper))


def test_claim_for_replacement_is_group_privacy() -> None:
    c = Claim.of("5/4", "1/100").for_replacement()
    assert c.exp_eps == Fraction(25, 16) and c.delta == Fraction(1, 100) * Fraction(9, 4)
    b = Claim.of("5/4", 0, "2^-126").for_replacement()
    assert b.bias_epsilon == Fraction(2, 2**126)
    assert Claim.of("5/4").epsilon == pytest.approx(math.log(1.25))


def test_neighbour_relations() -> None:
    check_neighbours({1: 2}, {1: 1}, "add/remove")
    check_neighbours({1: 1}, {}, "add/remove")
    check_neighbours(3, 4, "add/remove")
    check_neighbours({1: 1}, {2: 1}, "replacement")
    check_neighbours(3, 2, "replacement")
    for d, dp, rel in [({1: 2}, {1: 0}, "add/remove"), ({1: 1}, {2: 1}, "add/remove"), ({1: 1}, {1: 1}, "replacement"),
                       ({1: 2}, {2: 1}, "replacement"), (3, 5, "add/remove")]:
        with pytest.raises(ValueError):
            check_neighbours(d, dp, rel)


def test_events_on_releases_and_counts() -> None:
    release = basic_histogram({2: 3}, [0, 2, 5], 8, 4, GeoSample(n=4, epsilon="1"), SeededRandom(7))
    got = release.as_dict()
    assert released_mapping(release) == got and released_mapping(got) == got
    assert key_appears(2)(release) and not key_appears(1)(release)
    assert count_at_least(2, got[2])(release) and not count_at_least(2, got[2] + 1)(release)
    assert not count_at_least(1, 0)(release)  # an absent key has no count
    assert length_equals(3)(release) and length_at_least(3)(release) and not length_at_least(4)(release)
    assert value_equals(3)(3) and value_at_least(3)(4) and not value_at_least(3)(2)
    assert complement(value_at_least(3))(2)
    with pytest.raises(TypeError):
        value_equals(1)(release)
    with pytest.raises(TypeError):
        key_appears(1)(5)


def test_guaranteed_hits_are_exact_binomial_quantiles() -> None:
    n, p, miss = 60, Fraction(3, 10), 1e-3
    k_lo, k_hi = guaranteed_hits(n, float(p), miss)
    below = lambda k: 1 - binom_tail_at_least(k, n, p)  # Pr[X < k]
    assert below(k_lo) <= miss < below(k_lo + 1)
    above = lambda k: binom_tail_at_least(k + 1, n, p)  # Pr[X > k]
    assert above(k_hi) <= miss < above(k_hi - 1)


def test_planner_size_is_minimal_to_its_resolution_and_refuses_honest_probabilities() -> None:
    plan = plan_runs(Fraction(5, 4), 0.35, 0.10, events=6)
    alpha = alpha_per_bound(1e-6, 6)
    assert detects(plan.runs_per_side, 0.35, 0.10, 1.25, 0.0, alpha, 1e-6)
    assert not detects(int(plan.runs_per_side * 0.99), 0.35, 0.10, 1.25, 0.0, alpha, 1e-6)
    assert 100 < plan.runs_per_side < 2000
    # the normal approximation (bounds add linearly) predicts the same order of magnitude
    z = 5.3
    approx = (2 * z * (math.sqrt(0.65 / 0.35) + math.sqrt(0.9 / 0.1)) / math.log(0.35 / 0.125)) ** 2
    assert 0.5 < plan.runs_per_side / approx < 2
    with pytest.raises(ValueError, match="satisfy the claim"):
        plan_runs(Fraction(5, 4), 0.125, 0.10)
    loss = plan_for_loss(Fraction(5, 4), math.log(3.5), 0.1, events=6)
    assert loss.runs_per_side == plan.runs_per_side and loss.true_loss == pytest.approx(math.log(3.5))
