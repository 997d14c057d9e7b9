"""The black-box auditor catches known mutants, and the honest mechanisms pass at the same sample sizes.

False-alarm rate: every audit here runs at overall false-alarm rate <= 1e-6
(Bonferroni over 4 one-sided Clopper-Pearson bounds per event, both directions),
so each honest-pipeline test fails spuriously with probability <= 1e-6. Honest
runs use the CSPRNG (SystemRandom), as real audits do. Mutant runs use a seeded
generator (reproducible); the planner shows the audit catches them with
probability >= 1 - 1e-6 at the sizes used, so the seed is not cherry-picked luck.

Mutants:
1. FastSample with t capped at n (true loss ln 3.40 vs claimed ln 5/4);
2. StabilityHistogram with threshold tau = 0 (a count-1 key appears where its
   neighbour never shows it);
3. a counting mechanism whose real eps~ is 30% above the claim (eps~ ~ 0.2);
4. the compact histogram whose empty-bin preimage of v = 0 is one element short:
   tests/unit/audit/test_audit_compact.py (black box over GF(2^6), exact at m = 64).
The Spark-path catch of mutant 2 is in tests/system/spark/test_audit_spark.py.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import pytest

import dpspark.mechanisms.histogram.stability as stability_module
from dpspark.audit import (
    FALSE_ALARM,
    Claim,
    audit,
    counting_pipeline,
    key_appears,
    length_at_least,
    plan_runs,
    stability_pipeline,
    value_at_least,
    value_equals,
)
from dpspark.noise import FastSample, GeoSample, choose_exp_eps
from dpspark.mechanisms.histogram import stability_histogram, stability_mechanism, stability_threshold
from dpspark.rng import SeededRandom, SystemRandom, bias_epsilon
from dpspark.noise.verifier import worst_privacy_ratio

assert FALSE_ALARM == 1e-6


def prob(mech: FastSample | GeoSample, c: int, lo: int, hi: int) -> float:
    """Pr[lo <= M(c, U) <= hi] from the exact scaled CDF, as a float for planning."""
    return float(Fraction(mech.scaled_cdf(c, hi) - mech.scaled_cdf(c, lo - 1), mech.d))  # analysis only


# --- mutant 1: FastSample with t capped at n -------------------------------------------------------


def capped_t_mutant() -> FastSample:
    return FastSample(n=5, epsilon="1/2", gamma="1/5", rule="pow2", t=5)


def test_mutant_1_fixture_really_violates_its_claim() -> None:
    m = capped_t_mutant()
    report = worst_privacy_ratio(m)
    assert not m.t_is_private and report.worst_ratio is not None
    assert Fraction(34, 10) < report.worst_ratio < Fraction(341, 100) and m.exp_eps == Fraction(5, 4)


def test_mutant_1_capped_t_is_caught_and_honest_fastsample_passes() -> None:
    mutant = capped_t_mutant()
    honest = FastSample(n=5, epsilon="1/2", gamma="1/5", rule="pow2")
    events = [value_equals(z) for z in range(6)]  # black box: every output value, both directions
    claim = Claim(Fraction(5, 4), bias_epsilon=bias_epsilon(1))
    # worst pair (c, c') = (1, 0), z = 1: Pr = 0.355 vs 0.104
    plan = plan_runs(claim.exp_eps, prob(mutant, 1, 1, 1), prob(mutant, 0, 1, 1), events=len(events))
    runs = 2000
    assert plan.runs_per_side <= runs, plan.describe()
    bad = audit(counting_pipeline(mutant), 1, 0, events, claim, runs=runs, rng=SeededRandom(b"mutant-1"))
    assert not bad.passed, bad.report()
    assert bad.worst().event == "output == 1" and bad.worst().epsilon_lower > math.log(5 / 4)
    good = audit(counting_pipeline(honest), 1, 0, events, Claim(honest.exp_eps, bias_epsilon=bias_epsilon(1)), runs=runs)
    assert good.passed, good.report()


# --- mutant 2: StabilityHistogram with tau = 0 -----------------------------------------------------

N, UNIVERSE, EPS, DELTA = 4, 8, "1", "1/10"


@pytest.fixture()
def honest_stability() -> tuple[object, Claim]:
    mech = stability_mechanism(N, EPS, DELTA)
    assert stability_threshold(mech, DELTA) > 0  # otherwise tau = 0 would not be a mutant
    statement = stability_histogram({0: 1}, UNIVERSE, N, mech, DELTA, SeededRandom(0)).privacy
    return mech, Claim.from_statement(statement)


def test_mutant_2_stability_with_zero_threshold_is_caught(
    honest_stability: tuple[object, Claim], monkeypatch: pytest.MonkeyPatch
) -> None:
    mech, claim = honest_stability
    events = [key_appears(3), length_at_least(1)]
    runs = 1500
    honest_run = stability_pipeline(UNIVERSE, N, mech, DELTA)  # type: ignore[arg-type]
    good = audit(honest_run, {3: 1}, {}, events, claim, runs=runs)
    assert good.passed, good.report()

    monkeypatch.setattr(stability_module, "stability_threshold", lambda mechanism, delta, count=1: 0)
    mutant_run = stability_pipeline(UNIVERSE, N, mech, DELTA)  # type: ignore[arg-type]
    bad = audit(mutant_run, {3: 1}, {}, events, claim, runs=runs, rng=SeededRandom(b"mutant-2"))
    assert not bad.passed, bad.report()
    worst = bad.worst()
    assert worst.direction == "D vs D'" and worst.hits_b == 0  # the key never appears without its unit
    assert worst.hockey_stick_lower > claim.delta
    # power: at tau = 0, Pr[key appears | D] = Pr[M(1, U) > 0]
    p_appear = 1 - prob(mech, 1, 0, 0)  # type: ignore[arg-type]
    plan = plan_runs(claim.exp_eps, p_appear, 0.0, delta=claim.delta, events=len(events))
    assert plan.runs_per_side <= runs, plan.describe()


def test_mutant_2_under_replacement_neighbours(
    honest_stability: tuple[object, Claim], monkeypatch: pytest.MonkeyPatch
) -> None:
    mech, claim = honest_stability
    events = [key_appears(3), key_appears(5)]
    replacement = claim.for_replacement()
    run = stability_pipeline(UNIVERSE, N, mech, DELTA)  # type: ignore[arg-type]
    good = audit(run, {3: 1}, {5: 1}, events, replacement, runs=1500, relation="replacement")
    assert good.passed, good.report()
    monkeypatch.setattr(stability_module, "stability_threshold", lambda mechanism, delta, count=1: 0)
    bad = audit(run, {3: 1}, {5: 1}, events, replacement, runs=1500, rng=SeededRandom(b"m2r"), relation="replacement")
    assert not bad.passed, bad.report()


def test_audit_refuses_non_neighbours(honest_stability: tuple[object, Claim]) -> None:
    mech, claim = honest_stability
    run = stability_pipeline(UNIVERSE, N, mech, DELTA)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not neighbours"):
        audit(run, {3: 2}, {}, [key_appears(3)], claim, runs=10)


# --- mutant 3: real eps~ 30% above the claim, eps~ ~ 0.2 --------------------------------------------

CLAIM_3 = choose_exp_eps(Fraction(2, 5))  # 39/32, eps~ = 0.1978


def mutant_30_percent(exp_eps: Fraction) -> Fraction:
    """(p/q)^1.3 rounded to a rational (mutant construction, floats allowed)."""
    return Fraction(math.exp(1.3 * math.log(exp_eps))).limit_denominator(10**6)  # mutant construction


def mutant_3_plan(mech: GeoSample | FastSample, c: int) -> tuple[float, float, int]:
    """Event 'output >= c+1' on D = c+1 vs D' = c: its exact probabilities and the planned runs per side."""
    p_d = prob(mech, c + 1, c + 1, mech.n)
    p_dp = prob(mech, c, c + 1, mech.n)
    return p_d, p_dp, plan_runs(CLAIM_3, p_d, p_dp, events=1).runs_per_side


def test_mutant_3_planner_numbers() -> None:
    mutant = GeoSample(n=20, exp_eps=mutant_30_percent(CLAIM_3))
    assert 0.29 < math.log(mutant.exp_eps) / math.log(CLAIM_3) - 1 < 0.31
    p_d, p_dp, runs = mutant_3_plan(mutant, 10)
    assert p_d / p_dp == pytest.approx(float(mutant.exp_eps), rel=1e-9)  # the loss is exactly the mutant's eps~
    # measured: 113,344 runs per side (power >= 1 - 1e-6 at false-alarm <= 1e-6, one event)
    assert 100_000 < runs < 130_000
    # two events (both tails) cost a little more; the other tail's event is worse (smaller probabilities)
    assert plan_runs(CLAIM_3, p_d, p_dp, events=2).runs_per_side > runs
    p2_d, p2_dp = prob(mutant, 11, 12, 20), prob(mutant, 10, 12, 20)
    assert plan_runs(CLAIM_3, p2_d, p2_dp, events=1).runs_per_side > runs


def test_mutant_3_full_audit_at_planned_size() -> None:
    """About 9 s: 2 x 113,344 draws for the mutant and again for the honest GeoSample.

    Both use the CSPRNG (the seeded generator is ~2x slower): the mutant is caught with
    probability >= 1 - 1e-6 (planner), the honest one passes with probability >= 1 - 1e-6.
    """
    mutant = GeoSample(n=20, exp_eps=mutant_30_percent(CLAIM_3))
    honest = GeoSample(n=20, exp_eps=CLAIM_3)
    _, _, runs = mutant_3_plan(mutant, 10)
    events = [value_at_least(11)]
    bad = audit(counting_pipeline(mutant), 11, 10, events, Claim(CLAIM_3), runs=runs, rng=SystemRandom())
    assert not bad.passed, bad.report()
    good = audit(counting_pipeline(honest), 11, 10, events, Claim(CLAIM_3), runs=runs)
    assert good.passed, good.report()


@pytest.mark.slow
def test_mutant_3_fastsample_large_n_full_audit() -> None:
    """FastSample's truncated path at n = 10^6, gamma = 2^-70: same effect, same planned size (~25 s)."""
    mutant = FastSample(n=10**6, exp_eps=mutant_30_percent(CLAIM_3), gamma="2^-70")
    honest = FastSample(n=10**6, exp_eps=CLAIM_3, gamma="2^-70")
    assert mutant.fallback is None and honest.fallback is None
    c = 500_000
    _, _, runs = mutant_3_plan(mutant, c)
    events = [value_at_least(c + 1)]
    t0 = time.perf_counter()
    bad = audit(counting_pipeline(mutant), c + 1, c, events, Claim(CLAIM_3), runs=runs, rng=SystemRandom())
    assert not bad.passed, bad.report()
    good = audit(counting_pipeline(honest), c + 1, c, events, Claim(CLAIM_3), runs=runs)
    assert good.passed, good.report()
    assert time.perf_counter() - t0 < 600
