"""Mutant 4 (compact histogram, empty-bin preimage of v = 0 one element short) and the honest compact audits.

False-alarm rate: every audit here runs at overall false-alarm rate <= 1e-6
(Bonferroni over 4 one-sided Clopper-Pearson bounds per event, both
directions). Honest runs use the CSPRNG; mutant runs a seeded generator, and
the planner shows the audit catches the mutant with probability >= 1 - 1e-6
at the sizes used.

The mutant. ``ShortZeroPreimage`` (tests/unit/compact/test_compact_samplers.py): G is
unchanged but the construction draws a non-empty bin's target for noisy
count 0 from [F_G(0-1)+1, F_G(0) - 1], one element short. The element
F_G(0) is then never the field value of a data bin, while an empty bin has it
with probability 1/d0: unbounded loss (D' vs D) on the event
E = {iota(p(phi(x))) = F_G(0)}. Looked-up counts cannot see it (G maps
F_G(0) to 0 either way), so E is an event on the released polynomial's
value at x, which a black box reads like any lookup.

Sizes. At the production field m = 64, Pr_D'[E] = 2^-64: a black-box catch
would need ~10^22 runs per side (``test_black_box_infeasible_at_m_64``), so
there the mutant is caught exactly (``test_exact_catch_at_production_field``).
Over GF(2^6) (the exhaustive test's field, spec m = 2 * 3^1) Pr_D'[E] = 1/64 and
the planner asks for ~9,000 runs per side at false-alarm 1e-6, power 1 - 1e-6.

"The freed element goes to a neighbouring value" (``ShortZeroToOne``: the
element F_G(0) joins the preimage of v = 1). That variant is NOT a privacy
violation of the stated claim: exact ratios over every toy field and
parameter grid below stay under the claim (m_1(0) <= m_0(0) and the
certified eta/(1-eta) sampler term absorb one element); it is an accuracy bug
(a noisy 1 is read back as 0 with probability 1/(|G^-1(1)|+1)), checked exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction

import galois
import pytest
from tests.unit.compact.test_compact_samplers import ShortZeroPreimage

from dpspark.audit import (
    FALSE_ALARM,
    Claim,
    ToyField,
    audit,
    compact_pipeline,
    count_at_least,
    event_probability,
    exact_new_bin_ratios,
    field_value_in,
    field_value_law,
    plan_runs,
    toy_compact_histogram,
    toy_compact_pipeline,
)
from dpspark.mechanisms.compact import RoundedCdfSampler, compact_mechanism
from dpspark.noise import GeoSample
from dpspark.rng import SeededRandom

assert FALSE_ALARM == 1e-6


class ShortZeroToOne(RoundedCdfSampler):
    """Off-by-one at the 0/1 boundary of the construction's preimages: F_G(0) is drawn for v = 1, not v = 0.

    Lookups (G) are unchanged. Not a privacy violation (see module doc); an accuracy bug.
    """

    kind = "mutant-short-zero-to-one"

    def preimage(self, v: int) -> tuple[int, int]:
        lo, hi = super().preimage(v)
        if v == 0:
            return lo, hi - 1
        if v == 1:
            return lo - 1, hi
        return lo, hi


# --- toy parameters: the production mechanism choice, a toy field ----------------------------------

N, UNIVERSE, X, Y, M_TOY = 1, 8, 3, 5, 6
D, D_PRIME = {X: 1}, {}


def toy_mechanism() -> GeoSample:
    mech = compact_mechanism(N, UNIVERSE, "1")  # FastSample at n = 1 falls back to GeoSample, e^eps~ = 43/16
    assert mech.fallback is not None
    return mech.fallback


def toy_claim(sampler: RoundedCdfSampler) -> Claim:
    """The claim the release states (compact_privacy of the honest sampler, as the mutant states it too)."""
    honest = RoundedCdfSampler(sampler.mechanism, sampler.m)
    return Claim.from_statement(toy_compact_histogram(D, UNIVERSE, N, sampler.mechanism, honest, SeededRandom(0)).privacy)


def events_for(sampler: RoundedCdfSampler) -> list:
    top = sampler.cdf(0)  # F_G(0): the top element of G^-1(0)
    return [field_value_in(X, top, top), count_at_least(X, 1), count_at_least(Y, 1)]


# --- the toy field and construction are the production algorithm -------------------------------------


def test_toy_field_matches_galois() -> None:
    fld = ToyField(6)
    gf = galois.GF(2**6, irreducible_poly="x^6 + x^3 + 1", compile="python-calculate")
    a = gf(list(range(64)))
    table = (a.reshape(64, 1) * a.reshape(1, 64)).tolist()
    assert [[fld.mul(x, y) for y in range(64)] for x in range(64)] == table
    assert all(fld.mul(x, fld.inv(x)) == 1 for x in range(1, 64))
    two = ToyField(2)
    assert sorted(two.mul(x, y) for x in range(1, 4) for y in range(1, 4)).count(1) == 3  # a group: one inverse each


def test_toy_release_interpolates_the_targets_and_is_uniform_elsewhere() -> None:
    mech = toy_mechanism()
    g = RoundedCdfSampler(mech, M_TOY)
    n = 3
    mech3 = compact_mechanism(n, UNIVERSE, "1").fallback
    g3 = RoundedCdfSampler(mech3, M_TOY)
    rel = toy_compact_histogram({1: 2, 6: 1}, UNIVERSE, n, mech3, g3, SeededRandom(5))
    assert len(rel.coefficients) == n + 1
    for x in (1, 6):  # the data bins read back noisy counts through G
        assert rel.lookup([x]) == [g3.sample(rel.field_values([x])[0])]
    # an empty bin's field value is uniform on [1, 64]: all 64 values show up in 2,000 releases
    seen = {toy_compact_histogram({}, UNIVERSE, N, mech, g, SeededRandom(i)).field_values([X])[0] for i in range(2000)}
    assert seen == set(range(1, 65))


# --- mutant 4: exact facts ---------------------------------------------------------------------------


def test_exact_catch_at_toy_field() -> None:
    mech = toy_mechanism()
    honest, mutant = RoundedCdfSampler(mech, M_TOY), ShortZeroPreimage(mech, M_TOY)
    claim = toy_claim(honest)
    hi, lo = exact_new_bin_ratios(mech, honest)
    assert hi <= claim.exp_eps * Fraction(math.exp(float(claim.bias_epsilon))) and lo > 0  # analysis
    assert float(hi) < claim.e_epsilon and 1 / float(lo) < claim.e_epsilon  # analysis
    top = honest.cdf(0)
    mut_law = field_value_law(mech, mutant, 1)
    assert event_probability(mut_law, top, top) == 0  # never the field value of a data bin ...
    assert event_probability(field_value_law(mech, mutant, 0), top, top) == Fraction(1, 64)  # ... 1/64 for an empty one
    assert exact_new_bin_ratios(mech, mutant)[1] == 0  # D' vs D loss unbounded
    # the looked-up counts alone cannot show it: the law of h(x) is the honest one
    for v in range(N + 1):
        lo_v, hi_v = honest.preimage(v)
        assert event_probability(mut_law, lo_v, hi_v) == event_probability(field_value_law(mech, honest, 1), lo_v, hi_v)


def test_exact_catch_at_production_field() -> None:
    mech = compact_mechanism(1000, 2**20, "1")
    for m in (64, 128):
        honest = RoundedCdfSampler(mech, m)
        if not honest.valid():
            continue
        hi, lo = exact_new_bin_ratios(mech, honest)
        bound = float(mech.exp_eps) * math.exp(float(honest.sampler_epsilon()))  # analysis
        assert float(hi) <= bound and 1 / float(lo) <= bound  # analysis
        assert exact_new_bin_ratios(mech, ShortZeroPreimage(mech, m))[1] == 0


def test_black_box_infeasible_at_m_64() -> None:
    """At d0 = 2^64 the only violating event has Pr_D' = 2^-64: runs needed ~ ln(1/alpha) e^eps / 2^-64 > 10^20."""
    claim_e = 3.0
    alpha = FALSE_ALARM / 4
    lower_bound_runs = math.log(1 / alpha) * claim_e * 2.0**64  # the D side's upper bound alone needs this
    assert lower_bound_runs > 1e20
    with pytest.raises(ValueError, match="max_runs"):
        plan_runs(claim_e, 2.0**-64, 0.0, max_runs=10**12)


@pytest.mark.parametrize("m", [2, 6])
def test_freed_element_to_neighbour_is_within_the_claim_but_misreads(m: int) -> None:
    """ShortZeroToOne: exact loss <= claim on a grid of toy mechanisms; a noisy 1 is sometimes read as 0."""
    worst = 0.0
    for n in (1, 2, 3):
        for k in range(17, 80, 3):
            mech = GeoSample(n=n, exp_eps=Fraction(k, 16))
            honest = RoundedCdfSampler(mech, m)
            if not honest.valid():
                continue
            mutant = ShortZeroToOne(mech, m)
            bound = float(mech.exp_eps) * math.exp(float(honest.sampler_epsilon()))  # analysis
            hi, lo = exact_new_bin_ratios(mech, mutant)
            assert lo > 0
            worst = max(worst, float(hi) / bound, 1 / float(lo) / bound)  # analysis
            top = honest.cdf(0)  # G(top) = 0, but it is now a target of v = 1
            law = field_value_law(mech, mutant, 1)
            assert event_probability(law, top, top) == mech.pmf(1)[1] / (mutant.preimage(1)[1] - top + 1)
    assert 0 < worst < 1  # (m = 6: ~0.998 of the claim at worst; m = 2: the sampler term dominates)


# --- mutant 4: the black-box catch over GF(2^6) ------------------------------------------------------


def test_mutant_4_caught_black_box_and_honest_compact_passes() -> None:
    """GF(2^6), n = 1, e^eps~ = 43/16, D = {3: 1} vs D' = {}; 3 events; ~9,000 runs per side (~4 s per audit).

    Event 'field value at 3 == F_G(0) = 47': Pr_D' = 1/64, Pr_D = 0 (mutant) or 16/2773 (honest,
    ratio 2.71 < claimed e^eps = 2.857). Planned for false alarm <= 1e-6 and power >= 1 - 1e-6.
    """
    mech = toy_mechanism()
    honest, mutant = RoundedCdfSampler(mech, M_TOY), ShortZeroPreimage(mech, M_TOY)
    claim = toy_claim(honest)
    events = events_for(honest)
    plan = plan_runs(claim.e_epsilon, 1 / 64, 0.0, events=len(events))
    runs = plan.runs_per_side
    assert 8000 < runs < 10_000, plan.describe()
    bad = audit(toy_compact_pipeline(UNIVERSE, N, mech, mutant, [X, Y]), D, D_PRIME, events, claim, runs=runs, rng=SeededRandom(b"mutant-4"))
    assert not bad.passed, bad.report()
    worst = bad.worst()
    assert worst.event == f"field value at {X} == {honest.cdf(0)}" and worst.direction == "D' vs D" and worst.hits_b == 0
    good = audit(toy_compact_pipeline(UNIVERSE, N, mech, honest, [X, Y]), D, D_PRIME, events, claim, runs=runs)
    assert good.passed, good.report()


# --- honest compact at production size ---------------------------------------------------------------


def test_honest_compact_histogram_passes_at_m_64() -> None:
    """Production compact_histogram (m = 64, n = 4, |X| = 16), D = {3: 1} vs {}; 2,000 runs per side (~3 s).

    Events on the looked-up counts of the data bin and an empty bin; false alarm <= 1e-6.
    """
    mech = compact_mechanism(4, 16, "1")
    run = compact_pipeline(16, 4, mech, [X, Y], epsilon2="1/10")
    first = run(D, SeededRandom(0))
    assert first.privacy is not None
    claim = Claim.from_statement(first.privacy)
    events = [count_at_least(X, 1), count_at_least(X, 2), count_at_least(Y, 1)]
    good = audit(run, D, D_PRIME, events, claim, runs=2000)
    assert good.passed, good.report()
    assert good.worst().hits_a > 0  # the events are not vacuous
