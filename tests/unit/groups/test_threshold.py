"""Key selection by a threshold on the released noisy count: exact delta of the implemented law (docs/groups.md §F)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import pytest

from dpspark.mechanisms.groups.aggregates import Bounds, Statistic
from dpspark.mechanisms.groups.algorithm import GroupStats, plan_groups, release_planned
from dpspark.mechanisms.groups.noise_choice import Share, build
from dpspark.mechanisms.groups.threshold import ThresholdSelection
from dpspark.rng import SeededRandom

BOT = None  # "not released"


def _setup(k: int, c: int, delta: str, eps: str = "2", units: int = 10) -> tuple[ThresholdSelection, Fraction]:
    bounds = Bounds(k, c)
    noise = build(Statistic("count", 1, 1), "pure", Share(epsilon=Fraction(eps)), bounds, units, 128)
    sel = ThresholdSelection(noise.law, c, k, Fraction(delta), 128)
    return sel, noise.measure.epsilon.exp


def _key_law(sel: ThresholdSelection, x: int | None) -> dict:
    """Exact output law of one key whose count is x (None: the key is not observed): BOT or the released count."""
    if x is None:
        return {BOT: Fraction(1)}
    law = sel.law
    out: dict = {}
    for m, p in enumerate(law.mech.pmf(law.grid(x) - law.a_lo)):
        y = BOT if m < sel.t else law.G * (law.a_lo + m)
        out[y] = out.get(y, Fraction(0)) + p
    return out


def _joint(laws: list[dict]) -> dict:
    out: dict = {(): Fraction(1)}
    for law in laws:
        out = {o + (y,): p * q for o, p in out.items() for y, q in law.items()}
    return out


def _hockey(a: dict, b: dict, r: Fraction) -> Fraction:
    return sum((max(Fraction(0), p - r * b.get(o, Fraction(0))) for o, p in a.items()), Fraction(0))


def _worst_delta(sel: ThresholdSelection, r: Fraction, k: int, c: int, top: int) -> Fraction:
    """max hockey-stick divergence at e^eps = r over k keys' counts (None: unobserved) and a unit adding 1..c rows
    to each of them (exact laws; the rng's 1 + 2^-lam factor is not in the pmf)."""
    worst = Fraction(0)
    xs = [None] + list(range(1, top + 1))
    for base in product(xs, repeat=k):
        for add in product(range(1, c + 1), repeat=k):
            other = [a if x is None else x + a for x, a in zip(base, add)]
            if any(o > top for o in other):
                continue
            p, q = _joint([_key_law(sel, x) for x in base]), _joint([_key_law(sel, x) for x in other])
            worst = max(worst, _hockey(p, q, r), _hockey(q, p, r))
    return worst


@pytest.mark.parametrize("k,c", [(1, 1), (2, 1), (1, 2)])
def test_exact_delta_of_the_threshold_release(k: int, c: int) -> None:
    sel, r = _setup(k, c, "1/50")
    assert 0 < sel.t <= sel.law.mech.n
    assert _worst_delta(sel, r, k, c, 3) <= sel.delta() <= Fraction(1, 50)


def test_lower_threshold_or_delta_not_split_over_k_is_caught() -> None:
    """Mutants: the threshold one lower than the plan's; delta per key computed for k = 1 when k = 2."""
    sel, r = _setup(1, 1, "1/50")
    sel.t -= 1
    assert _worst_delta(sel, r, 1, 1, 3) > Fraction(1, 50)
    sel2, r2 = _setup(2, 1, "1/50")
    undivided, _ = _setup(1, 1, "1/50", eps="1")  # per key the whole delta: same per-coordinate eps as k = 2, eps 2
    sel2.t = undivided.t
    assert sel2.t < _setup(2, 1, "1/50")[0].t
    assert _worst_delta(sel2, r2, 2, 1, 2) > Fraction(1, 50)


def test_new_key_with_c_rows_sets_the_threshold() -> None:
    """Mutant: a new key assumed to bring 1 row when a unit brings c = 2: the threshold is too low."""
    sel, r = _setup(1, 2, "1/50")
    one_row = ThresholdSelection(sel.law, 1, 1, Fraction(1, 50), 128)
    assert one_row.t < sel.t
    sel.t = one_row.t
    assert _worst_delta(sel, r, 1, 2, 3) > Fraction(1, 50)


def test_release_selects_with_the_count_draw_and_spends_no_epsilon_on_it() -> None:
    aggs = [{"name": "n", "kind": "count"}, {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1"}]
    plan = plan_groups(aggs, {"epsilon": "1", "delta": "1e-6"}, max_units=10**4, private_keys=True)
    assert isinstance(plan.selection, ThresholdSelection)
    assert "selection" not in plan.shares  # no share of epsilon of its own
    assert plan.statement.measure.delta == plan.selection.delta() <= Fraction(1, 10**6)
    t = plan.selection.threshold_value()
    groups = [GroupStats(i, {"n": (u,), "s": (u, u * 128)}, u) for i, u in enumerate([1, 2, 5, 200, 400, 9000])]
    rel = release_planned(plan, groups, SeededRandom(4))
    assert rel.keys[-3:] == [3, 4, 5]  # far above the threshold
    assert all(v["n"].value >= t for v in rel.values)  # a key is released only when its released count passes


def test_without_a_count_selection_takes_its_own_share() -> None:
    from dpspark.mechanisms.groups.selection import SelectionLaw

    aggs = [{"name": "q", "kind": "quantile", "column": "x", "lo": "0", "hi": "1", "q": "1/2", "bins": 8}]
    plan = plan_groups(aggs, {"epsilon": "1", "delta": "1e-6"}, max_units=10**4, private_keys=True)
    assert isinstance(plan.selection, SelectionLaw) and plan.shares["selection"] > 0
