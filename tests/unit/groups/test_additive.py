"""Exact laws of the additive group aggregates: sensitivities, the k-coordinate charge, bounds (docs/groups.md §B, §C)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import pytest

from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError, GroupsTypeError, Kind, derive, parse_aggregate
from dpspark.mechanisms.groups.algorithm import GroupStats, plan_groups, release_planned
from dpspark.mechanisms.groups.laws import PureLaw
from dpspark.mechanisms.groups.noise_choice import Share, build
from dpspark.rng import SeededRandom


def test_validation_names_fields_and_refuses_floats() -> None:
    with pytest.raises(GroupsTypeError, match=r"aggregate 'd'\.lo was given as a float"):
        parse_aggregate({"name": "d", "kind": "sum", "column": "x", "lo": 0.5, "hi": "1"})
    with pytest.raises(GroupsError, match=r"aggregate 'm'\.q must lie in \(0, 1\)"):
        parse_aggregate({"name": "m", "kind": "quantile", "column": "x", "lo": "0", "hi": "1", "q": "1"})
    with pytest.raises(GroupsError, match=r"'c': a count takes no 'column'"):
        parse_aggregate({"name": "c", "kind": "count", "column": "x"})
    with pytest.raises(GroupsError, match="max_groups_per_unit"):
        Bounds(0, 1)


def _agg(kind: str, lo: str = "-1/2", hi: str = "1", bits: int = 1) -> Aggregate:
    return parse_aggregate({"name": "a", "kind": kind, "column": "x", "lo": lo, "hi": hi, "scale_bits": bits})


def _raw(agg: Aggregate, rows: list[Fraction], clip: bool = True) -> tuple[int, ...]:
    """Reference raw tuple of a group's rows (the engine's job); clip=False is the 'dropped clip' mutant."""
    vs = [agg.fixed_point(x) if clip else round(x * agg.scale) for x in rows]
    return {Kind.SUM: (len(vs), sum(vs)), Kind.MEAN: (len(vs), sum(vs)),
            Kind.VARIANCE: (len(vs), sum(vs), sum(v * v for v in vs))}[agg.kind]


@pytest.mark.parametrize("kind", ["sum", "mean", "variance"])
def test_sensitivity_holds_and_the_dropped_clip_breaks_it(kind: str) -> None:
    """Every statistic moves by <= its sensitivity when a unit adds c = 2 rows; without the clip it does not."""
    agg, bounds = _agg(kind), Bounds(1, 2)
    values = [Fraction(v, 2) for v in range(-3, 5)]  # includes values outside [lo, hi] = [-1/2, 1]
    sens = [s.sensitivity(bounds) for s in agg.statistics()]
    worst, worst_unclipped = [0] * len(sens), [0] * len(sens)
    for base in product(values, repeat=2):
        for unit in product(values, repeat=2):
            for clip, acc in ((True, worst), (False, worst_unclipped)):
                a = derive(agg, _raw(agg, list(base), clip))
                b = derive(agg, _raw(agg, list(base) + list(unit), clip))
                for i, (x, y) in enumerate(zip(a, b)):
                    acc[i] = max(acc[i], abs(x - y))
    assert worst == sens  # tight
    assert any(u > s for u, s in zip(worst_unclipped, sens))


def _ratio_max(law: PureLaw, lo: int, hi: int, shift: int) -> Fraction:
    """max over x, x + s (s <= shift, both in [lo, hi]) and outputs of Pr[y | x] / Pr[y | x + s], exactly."""
    mech = law.mech
    pmfs = {x: mech.pmf(law.grid(x) - law.a_lo) for x in range(lo, hi + 1)}
    best = Fraction(0)
    for x in range(lo, hi + 1):
        for s in range(-shift, shift + 1):
            if s and lo <= x + s <= hi:
                best = max(best, max(p / q for p, q in zip(pmfs[x], pmfs[x + s])))
    return best


@pytest.mark.parametrize("kind,k", [("count", 1), ("count", 2), ("sum", 1), ("sum", 3)])
def test_pure_charge_is_once_per_aggregate_over_k_groups(kind: str, k: int) -> None:
    """The exact worst ratio of the k changed coordinates is the stated exp part, up to one grid step.

    Mutants: parallel composition that ignores k (max over groups) states less than the exact ratio;
    charging per group (G = 3 groups) states more than one step above it.
    """
    agg = Aggregate("a", Kind.COUNT) if kind == "count" else _agg("sum")
    bounds = Bounds(k, 1)
    stat = agg.statistics()[0]
    noise = build(stat, "pure", Share(epsilon=Fraction(1)), bounds, max_units=3, lam=128)
    law = noise.law
    lo, hi = stat.range(3)
    per_coord = _ratio_max(law, lo, hi, stat.sensitivity(bounds))
    exact = per_coord ** k  # independent coordinates: the worst outputs multiply
    stated = noise.measure.epsilon.exp
    assert exact <= stated < exact * law.exp_eps ** law.g
    assert noise.measure.epsilon.extra == Fraction(4 * k, 1 << 128)  # the k changed draws' rng bias
    parallel_mutant = stated ** Fraction(1, 1) if k == 1 else law.exp_eps ** law.g  # max over groups: one coordinate
    if k > 1:
        assert parallel_mutant < exact
    per_group_mutant = stated ** 3
    assert not per_group_mutant < exact * law.exp_eps ** law.g


def test_plan_does_not_depend_on_the_number_of_groups() -> None:
    aggs = [{"name": "n", "kind": "count"}, {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1"}]
    plan = plan_groups(aggs, {"epsilon": "1"}, max_units=50)
    few = release_planned(plan, [], SeededRandom(1), keys=["a"])
    many = release_planned(plan, [], SeededRandom(1), keys=[str(i) for i in range(40)])
    assert few.statement == many.statement == plan.statement
    assert plan.statement.measure.epsilon <= Fraction(1)


def test_bounded_noise_is_within_its_sure_bound() -> None:
    agg = _agg("sum", "0", "3", 0)
    noise = build(agg.statistics()[0], "bounded", Share(epsilon=Fraction(2), delta=Fraction(1, 10**6)), Bounds(), 5, 128)
    law = noise.law
    support = list(law.noise.iter_support())
    for x in range(0, 16):
        worst = max(abs(law.G * (law.grid(x) + z) - x) for z in support)
        assert worst <= law.always
    assert max(abs(law.G * (law.grid(x) + support[0]) - x) for x in range(16)) == law.always


def _mean_failure(beta: Fraction, drop_count_term: bool) -> tuple[Fraction, int]:
    """(exact Pr[|released mean - true mean| > stated error], outcomes inside the noise event that break it).

    The bound is a deterministic consequence of |N~ - N| <= e_N and |Y~ - Y| <= e_Y (each w.p. >= 1 - beta/2),
    so no outcome inside that event may break it."""
    aggs = [{"name": "m", "kind": "mean", "column": "x", "lo": "0", "hi": "1", "scale_bits": 0}]
    plan = plan_groups(aggs, {"epsilon": "2"}, max_units=3, beta=beta, pairs=False)  # the (n, csum) mean
    law = plan.laws["m"]
    agg = plan.aggregates[0]
    raw = (2, 2)  # values 1 and 1: mean 1 (|Y/N| = D: the count's noise matters most)
    xs = derive(agg, raw)
    laws = law.laws
    pmfs = [lw.mech.pmf(lw.grid(x) - lw.a_lo) for lw, x in zip(laws, xs)]
    e_n, e_y = plan.errors["m"]
    fail, inside = Fraction(0), 0
    for i, pn in enumerate(pmfs[0]):
        for j, py in enumerate(pmfs[1]):
            n = laws[0].G * (laws[0].a_lo + i)
            y = laws[1].G * (laws[1].a_lo + j)
            if n <= 0:
                continue  # the midpoint: within D/2 always
            D, C = agg.D, agg.L + agg.H
            m_y = min(max(y / n, Fraction(-D)), Fraction(D))
            e_m = min(((e_y if drop_count_term else e_y + D * e_n)) / n, Fraction(2 * D))
            value, bound = (C + m_y) / 2, min(Fraction(D), e_m / 2)
            if abs(value - 1) > bound:
                fail += pn * py
                inside += abs(n - xs[0]) <= e_n and abs(y - xs[1]) <= e_y
    return fail, inside


def test_mean_bound_is_honest_and_the_count_term_is_needed() -> None:
    beta = Fraction(1, 4)
    fail, inside = _mean_failure(beta, drop_count_term=False)
    assert fail <= beta and inside == 0
    assert _mean_failure(beta, drop_count_term=True)[1] > 0


def test_zero_centred_sum_sensitivity_with_rows_without_values() -> None:
    """zsum = 2T - C' N_all moves by <= D' when a unit adds c = 2 rows, some without a value (dropped: v' = 0),
    and T = (zsum + C' N_all) / 2. Mutant: centring on C = L + H (not C') breaks the sensitivity when 0 is
    outside [lo, hi]."""
    from dpspark.mechanisms.groups.basis import plan_parts

    for lo, hi in (("-1/2", "1"), ("1/2", "2")):
        agg = parse_aggregate({"name": "s", "kind": "sum", "column": "x", "lo": lo, "hi": hi, "scale_bits": 1})
        cnt = Aggregate("n", Kind.COUNT)
        parts, basis = plan_parts([cnt, agg], {})
        assert basis["s"].form == "zero" and parts[basis["s"].parts[0]].key.label == "rows"
        stat = agg.zero_statistic()
        d = stat.sensitivity(Bounds(1, 2))
        lo_, hi_ = agg.zero_range
        values = [None, Fraction(-1), Fraction(0), Fraction(1, 2), Fraction(3)]

        def stats(rows: list, centre: int) -> tuple[int, int, int]:
            vs = [agg.fixed_point(x) for x in rows if x is not None]
            N_all, T = len(rows), sum(vs)
            return 2 * T - centre * N_all, T, N_all

        worst = worst_mutant = 0
        for base in product(values, repeat=2):
            for unit in product(values, repeat=2):
                a, b = stats(list(base), lo_ + hi_), stats(list(base) + list(unit), lo_ + hi_)
                assert a[1] == Fraction(a[0] + (lo_ + hi_) * a[2], 2)
                worst = max(worst, abs(a[0] - b[0]))
                ma, mb = stats(list(base), agg.L + agg.H), stats(list(base) + list(unit), agg.L + agg.H)
                worst_mutant = max(worst_mutant, abs(ma[0] - mb[0]))
        assert worst <= d
        if Fraction(lo) > 0:
            assert worst_mutant > d


def _sum_failure(beta: Fraction, drop_count_term: bool) -> tuple[Fraction, int]:
    """Like _mean_failure, for a sum centred on the released count: (exact failure probability, outcomes inside
    the event |N~ - N| <= e_N, |Y~ - Y| <= e_Y (each at beta / 2) that break the stated bar)."""
    aggs = [{"name": "n", "kind": "count"}, {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "2",
                                              "scale_bits": 0}]
    plan = plan_groups(aggs, {"epsilon": "3"}, max_units=2, beta=beta)
    b = plan.basis["s"]
    assert b.form == "zero"
    ln, ly = (plan.noises[i].law for i in b.parts)
    e_n, e_y = plan.bar(b.parts[0], beta / 2), plan.bar(b.parts[1], beta / 2)
    stated = plan.errors["s"][0] if not drop_count_term else e_y / 2
    N, T = 2, 4  # two rows of value 2: |C'| N matters most
    y = 2 * T - b.centre * N
    pn, py = ln.mech.pmf(ln.grid(N) - ln.a_lo), ly.mech.pmf(ly.grid(y) - ly.a_lo)
    fail, inside = Fraction(0), 0
    for i, p1 in enumerate(pn):
        for j, p2 in enumerate(py):
            n_ = ln.G * (ln.a_lo + i)
            y_ = ly.G * (ly.a_lo + j)
            if abs((y_ + b.centre * n_) / 2 - T) > stated:
                fail += p1 * p2
                inside += abs(n_ - N) <= e_n and abs(y_ - y) <= e_y
    return fail, inside


def test_centred_sum_bound_is_honest_and_the_count_term_is_needed() -> None:
    beta = Fraction(1, 4)
    fail, inside = _sum_failure(beta, drop_count_term=False)
    assert fail <= beta and inside == 0
    assert _sum_failure(beta, drop_count_term=True)[1] > 0


@pytest.mark.parametrize("eps,beta", [("1", "1/20"), ("1/4", "1/10"), ("3", "1/1000")])
def test_pure_error_bar_bounds_the_exact_accuracy(eps: str, beta: str) -> None:
    """The closed-form bar is never below the law's exact accuracy, and at most one grid step above it."""
    for stat in (Aggregate("a", Kind.COUNT).statistics()[0], _agg("sum").statistics()[0]):
        law = build(stat, "pure", Share(epsilon=Fraction(eps)), Bounds(1, 1), 200, 128).law
        exact = law.mech.accuracy(Fraction(beta))
        assert exact <= law.accuracy_bound(Fraction(beta)) <= exact + 1
