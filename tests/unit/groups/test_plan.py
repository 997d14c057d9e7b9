"""The plan: shared statistics, the budget split, the noise choice's Gaussian screen (docs/groups.md §D)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpspark.engine.numeric import NullRule
from dpspark.mechanisms.groups.aggregates import Bounds, Statistic
from dpspark.mechanisms.groups.algorithm import plan_groups
from dpspark.mechanisms.groups.noise_choice import Share, build, gaussian_considered
from dpspark.mechanisms.groups.split import SPLIT_DENOMINATOR, exact_shares, minimax_fractions

COUNT = {"name": "n", "kind": "count"}
SUM = {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "100"}
MEAN = {"name": "m", "kind": "mean", "column": "x", "lo": "0", "hi": "100"}
MEDIAN = {"name": "q", "kind": "quantile", "column": "x", "lo": "0", "hi": "100", "q": "1/2", "bins": 100}


def test_shares_are_exact_and_sum_to_one() -> None:
    for fr in ([0.5, 0.5], [0.001, 0.999], [1 / 3] * 3, [0.0, 0.2, 0.8]):
        sh = exact_shares(fr)
        assert sum(sh) == 1 and all(x >= Fraction(1, SPLIT_DENOMINATOR) for x in sh)


def test_minimax_equalises_the_ratios() -> None:
    """count {N: 1} and a sum centred on it {N: 50, Y: 50} (alone: 100): both ratios equal at f_N = sqrt3/(1+sqrt3)."""
    f = minimax_fractions(2, [{0: 1.0}, {0: 50.0, 1: 50.0}], [1.0, 100.0])
    assert abs(f[0] - 3 ** 0.5 / (1 + 3 ** 0.5)) < 2e-3  # report: float heuristic checked against its closed form


def test_count_and_sum_share_the_count_and_selection_is_free() -> None:
    plan = plan_groups([COUNT, SUM], {"epsilon": "1", "delta": "1e-9"}, max_units=10**6, private_keys=True)
    assert plan.basis["s"].form == "zero" and plan.basis["s"].parts[0] == plan.basis["n"].parts[0]
    assert len(plan.parts) == 2 and plan.shares["rows"] > Fraction(1, 2)
    assert plan.statement.measure.epsilon.le(Fraction(1)) and plan.statement.measure.delta <= Fraction(1, 10**9)


def test_sum_and_mean_share_their_statistics_and_the_quantile_keeps_its_share() -> None:
    plan = plan_groups([SUM, MEAN, MEDIAN], {"epsilon": "1"}, max_units=10**6)
    assert plan.basis["s"].form == "pairsum" and plan.basis["s"].parts == plan.basis["m"].parts
    assert len(plan.parts) == 1 and sum(plan.shares.values()) == 1
    old = plan_groups([SUM, MEAN, MEDIAN], {"epsilon": "1"}, max_units=10**6, pairs=False)
    assert old.basis["s"].form == "centred" and old.basis["s"].parts == old.basis["m"].parts
    assert len(old.parts) == 2
    assert plan.shares["q"] == Fraction(1, 3)  # as alone: the sharers keep their gains
    weighted = plan_groups([SUM, MEAN, MEDIAN], {"epsilon": "1"}, max_units=10**6, weights=["1", "1", "2"])
    assert weighted.shares["q"] == Fraction(1, 2)
    assert plan.statement.measure.epsilon.le(Fraction(1))


def test_a_sum_alone_stays_plain_and_an_imputing_rule_centres_on_the_count() -> None:
    assert plan_groups([SUM], {"epsilon": "1"}, max_units=100).basis["s"].form == "plain"
    imputed = plan_groups([COUNT, SUM, MEAN], {"epsilon": "1"}, max_units=100, nulls={"x": NullRule(Fraction(0))},
                          pairs=False)
    assert imputed.basis["m"].parts[0] == imputed.basis["n"].parts[0]  # N_x = N_all: one count
    dropped = plan_groups([COUNT, SUM, MEAN], {"epsilon": "1"}, max_units=100, pairs=False)
    assert dropped.basis["m"].parts[0] != dropped.basis["n"].parts[0]
    assert len(dropped.parts) == 3 and len(imputed.parts) == 2


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("delta", ["1e-6", "1e-9"])
@pytest.mark.parametrize("beta", ["1/20", "1/4"])
def test_gaussian_screen_only_skips_candidates_that_lose(k: int, delta: str, beta: str) -> None:
    share = Share(epsilon=Fraction(1, 3), delta=Fraction(delta) / 3)
    bounds = Bounds(k, 1)
    assert not gaussian_considered(share, bounds, Fraction(beta))
    for stat in (Statistic("count", 1, 1), Statistic("zsum", -256, 256)):
        pure = build(stat, "pure", share, bounds, 10**6, 128)
        for other in ("gaussian", "bounded"):
            assert pure.score(Fraction(beta)) < build(stat, other, share, bounds, 10**6, 128).score(Fraction(beta))


def test_gaussian_is_considered_when_it_can_win() -> None:
    assert gaussian_considered(Share(epsilon=Fraction(1), delta=Fraction(1, 10**6)), Bounds(5, 1), Fraction(1, 20))
    assert gaussian_considered(Share(rho=Fraction(1)), Bounds(1, 1), Fraction(1, 20))


def test_quantile_plans_fast_at_a_small_share() -> None:
    import time

    t0 = time.perf_counter()
    plan_groups([SUM, MEAN, MEDIAN], {"epsilon": "1/100"}, max_units=10**6)
    assert time.perf_counter() - t0 < 10  # the old exact quantile table refused eps/3 = 1/300 (and took 9 s at 1/30)
