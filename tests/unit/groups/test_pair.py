"""The distance pair: joint sensitivity, exact privacy of the implemented law, honest mean bounds (docs/groups.md §D)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import pytest

from dpspark.mechanisms.groups.aggregates import parse_aggregate
from dpspark.mechanisms.groups.algorithm import GroupStats, plan_groups, release_planned
from dpspark.mechanisms.groups.pair import PairLaw
from dpspark.rng import SeededRandom

AGG = parse_aggregate({"name": "m", "kind": "mean", "column": "x", "lo": "0", "hi": "4", "scale_bits": 0})
VALUES = [None, Fraction(0), Fraction(1), Fraction(3), Fraction(4), Fraction(9)]  # None: no value; 9 clips to 4


def _stats(rows: list) -> tuple[int, int]:
    """(U, N) of a group's rows: U = sum (v - L) over the rows with a value."""
    vs = [AGG.fixed_point(x) for x in rows if x is not None]
    return sum(v - AGG.L for v in vs), len(vs)


def _neighbours(c: int, base_rows: int = 2):
    for base in product(VALUES, repeat=base_rows):
        for m in range(1, c + 1):
            for unit in product(VALUES, repeat=m):
                yield _stats(list(base)), _stats(list(base) + list(unit))


@pytest.mark.parametrize("c", [1, 2])
def test_joint_rounding_moves_the_pair_by_at_most_c_g0(c: int) -> None:
    law = PairLaw(AGG.D, c, 1, 8, Fraction(1), 128)
    worst = 0
    for (u, n), (u2, n2) in _neighbours(c):
        a, b = law.grid(u, n)
        a2, b2 = law.grid(u2, n2)
        assert a + b == n * law.g0 and 0 <= a <= n * law.g0
        worst = max(worst, abs(a2 - a) + abs(b2 - b))
    assert worst == c * law.g0  # tight


def _joint_ratio(law: PairLaw, c: int, independent_rounding: bool = False) -> Fraction:
    """max over neighbours and outputs of Pr[(a~, b~) | D] / Pr[(a~, b~) | D'] on the implemented law, exactly."""
    mech = law.mech
    pmf = {}

    def grid(u: int, n: int) -> tuple[int, int]:
        if not independent_rounding:
            return law.grid(u, n)
        w = n * AGG.D - u  # mutant: b = round(W / G) on its own
        return law.grid(u, n)[0], (2 * w * law.g0 + AGG.D) // (2 * AGG.D)

    def law_of(u: int, n: int) -> tuple[list[Fraction], list[Fraction]]:
        a, b = grid(u, n)
        for x in (a, b):
            if x not in pmf:
                pmf[x] = mech.pmf(x)
        return pmf[a], pmf[b]

    worst = Fraction(0)
    for (u, n), (u2, n2) in _neighbours(c):
        pa, pb = law_of(u, n)
        qa, qb = law_of(u2, n2)
        ra = max(max(x / y, y / x) for x, y in zip(pa, qa))  # the joint ratio is the product of the two worst
        rb = max(max(x / y, y / x) for x, y in zip(pb, qb))
        worst = max(worst, ra * rb)
    return worst


@pytest.mark.parametrize("c", [1, 2])
def test_pair_is_pure_at_its_statement_and_independent_rounding_is_caught(c: int) -> None:
    law = PairLaw(AGG.D, c, 1, 2 + c, Fraction(2), 128)
    stated = law.epsilon().exp  # (p/q)^(k c g0); the rng bias is the separate rational part
    assert _joint_ratio(law, c) <= stated
    assert _joint_ratio(law, c, independent_rounding=True) > stated


def test_pair_statement_ignoring_c_is_caught() -> None:
    law = PairLaw(AGG.D, 2, 1, 4, Fraction(2), 128)
    mutant = PairLaw(AGG.D, 1, 1, 8, Fraction(2), 128)  # calibrated for one row per unit, the same n
    assert _joint_ratio(mutant, 2) > mutant.epsilon().exp
    assert _joint_ratio(law, 2) <= law.epsilon().exp


def _mean_failure(beta: Fraction, drop_rounding_term: bool) -> tuple[Fraction, int]:
    """(exact Pr[|mean~ - mean| > bound], outcomes inside |Z_a|, |Z_b| <= e that break it); the mutant drops the
    rounding term 1 / (2 max(g0, s~ - 2e))."""
    plan = plan_groups([{"name": "m", "kind": "mean", "column": "x", "lo": "0", "hi": "3", "scale_bits": 0}],
                       {"epsilon": "3"}, max_units=3, beta=beta)
    law = plan.laws["m"].laws[0]
    assert plan.basis["m"].form == "pairmean"
    e = plan.errors["m"][0]
    D, g0 = 3, law.g0
    u, n = 2, 2  # values 1 and 1: the mean 1 is 1/3 of the way, a = round(2 * 2 / 3) = 1 (rounded)
    a, b = law.grid(u, n)
    true = Fraction(u, n)
    fail, inside = Fraction(0), 0
    pa, pb = law.mech.pmf(a), law.mech.pmf(b)
    for x, p1 in enumerate(pa):
        for y, p2 in enumerate(pb):
            s_ = x + y
            if s_ <= 0:
                continue  # the midpoint with its sure bound D/2
            p = min(max(Fraction(x, s_), Fraction(0)), Fraction(1))
            bound = D * (e / s_ + (0 if drop_rounding_term else Fraction(1, 2 * max(g0, s_ - 2 * e))))
            if abs(D * p - true) > min(Fraction(D), bound):
                fail += p1 * p2
                inside += abs(x - a) <= e and abs(y - b) <= e
    return fail, inside


def test_pair_mean_bound_is_honest_and_the_rounding_term_is_needed() -> None:
    beta = Fraction(1, 4)
    fail, inside = _mean_failure(beta, drop_rounding_term=False)
    assert fail <= beta and inside == 0
    assert _mean_failure(beta, drop_rounding_term=True)[1] > 0


def test_sum_and_mean_share_the_pair_and_the_sum_is_exact_without_noise() -> None:
    aggs = [{"name": "s", "kind": "sum", "column": "x", "lo": "-1", "hi": "3", "scale_bits": 2},
            {"name": "m", "kind": "mean", "column": "x", "lo": "-1", "hi": "3", "scale_bits": 2}]
    plan = plan_groups(aggs, {"epsilon": "1"}, max_units=100)
    assert plan.basis["s"].form == "pairsum" and plan.basis["s"].parts == plan.basis["m"].parts
    assert len(plan.parts) == 1 and plan.shares[plan.parts[0].key.text()] == 1
    law = plan.laws["s"].laws[0]
    agg = plan.aggregates[0]
    for u, n in ((0, 0), (7, 3), (16, 4), (5, 5)):  # T = U + L N; (H a + L b) / g0 = T up to G/2
        a, b = law.grid(u, n)
        t = u + agg.L * n
        assert abs(Fraction(agg.H * a + agg.L * b, law.g0) - t) <= law.G / 2
    rel = release_planned(plan, [GroupStats("k", {"s": (4, 8), "m": (4, 8)})], SeededRandom(2), keys=["k"])
    assert rel.values[0]["s"].error == plan.errors["s"][0] / agg.scale
