"""A count read off a mean's distance pair (docs/groups.md §G, issue 34 §3): free of epsilon, its bar exact-checked."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpspark.engine.numeric import NullRule
from dpspark.mechanisms.groups.aggregates import Bounds
from dpspark.mechanisms.groups.algorithm import GroupStats, plan_groups, release_planned
from dpspark.mechanisms.groups.integer_counts import integer_bar, integer_count
from dpspark.rng import SeededRandom

COUNT = {"name": "n", "kind": "count"}


def _mean(hi: str = "3") -> dict:
    return {"name": "m", "kind": "mean", "column": "x", "lo": "0", "hi": hi, "scale_bits": 0}


IMPUTE = {"x": NullRule(value=Fraction(0))}


def test_count_reads_the_pair_only_when_the_column_imputes_and_keys_are_public() -> None:
    plan = plan_groups([COUNT, _mean()], {"epsilon": "1"}, max_units=50, nulls=IMPUTE)
    assert plan.basis["n"].form == "paircount" and plan.basis["n"].parts == plan.basis["m"].parts
    assert len(plan.parts) == 1 and plan.shares[plan.parts[0].key.text()] == 1
    # the count costs nothing: the statement is the mean's alone
    alone = plan_groups([_mean()], {"epsilon": "1"}, max_units=50, nulls=IMPUTE)
    assert plan.statement.text() == alone.statement.text()
    # NULLs dropped: the pair counts rows with a value, not every row -> the count keeps its own part
    drop = plan_groups([COUNT, _mean()], {"epsilon": "1"}, max_units=50)
    assert drop.basis["n"].form == "count" and len(drop.parts) == 2
    # private keys threshold a rows part
    priv = plan_groups([COUNT, _mean()], {"epsilon": "1", "delta": "1e-9"}, max_units=50, nulls=IMPUTE,
                       private_keys=True)
    assert priv.basis["n"].form == "count"


def _count_failure(beta: Fraction, one_coordinate: bool) -> Fraction:
    """max over (U, N) of the exact Pr[|round((a~ + b~) / g0) - N| > bar] (the implemented FastSample laws);
    the mutant states the bar of one coordinate at beta, as if the count were a single draw."""
    plan = plan_groups([COUNT, _mean()], {"epsilon": "1"}, max_units=10, beta=beta, nulls=IMPUTE)
    law = plan.laws["m"].laws[0]
    bar = plan.errors["n"][0]
    if one_coordinate:
        bar = integer_bar(Fraction(law.error(beta), law.g0))
    worst = Fraction(0)
    for n in range(0, 11):
        for u in range(0, 3 * n + 1):
            a, b = law.grid(u, n)
            pa, pb = law.mech.pmf(a), law.mech.pmf(b)
            fail = sum((p1 * p2 for x, p1 in enumerate(pa) for y, p2 in enumerate(pb)
                        if abs(integer_count(Fraction(x + y, law.g0)) - n) > bar), Fraction(0))
            worst = max(worst, fail)
    return worst


def test_pair_count_bar_covers_exactly_and_a_one_coordinate_bar_is_caught() -> None:
    beta = Fraction(1, 3)  # every (U, N) of <= 10 rows in [0, 3]; the mutant fails at e.g. N = 5
    assert _count_failure(beta, one_coordinate=False) <= beta
    assert _count_failure(beta, one_coordinate=True) > beta


def test_released_count_is_the_integer_of_the_pair_and_states_its_bar() -> None:
    plan = plan_groups([COUNT, _mean("100")], {"epsilon": "1"}, max_units=1000, nulls=IMPUTE)
    law = plan.laws["m"].laws[0]
    stats = [GroupStats(k, {"n": (n,), "m": (n, t)}) for k, n, t in (("a", 10, 500), ("b", 0, 0), ("c", 400, 9000))]
    rel = release_planned(plan, stats, SeededRandom(7), keys=["a", "b", "c"])
    again = SeededRandom(7)  # the same draws: the pair's a's, then its b's
    U = [500, 0, 9000]
    N = [10, 0, 400]
    a_, b_ = law.release_many(np.array(U), np.array(N), again)
    for v, x, y in zip(rel.values, a_.tolist(), b_.tolist()):
        assert v["n"].value == integer_count(Fraction(x + y, law.g0)) and v["n"].value.denominator == 1
        assert v["n"].error == plan.errors["n"][0] == integer_bar(Fraction(2 * law.error(plan.beta / 2), law.g0))


@pytest.mark.parametrize("c", [1, 3])
def test_split_gives_the_pair_the_whole_share_with_other_aggregates(c: int) -> None:
    aggs = [COUNT, _mean("100"), {"name": "q", "kind": "quantile", "column": "x", "q": "1/2", "lo": "0", "hi": "100"}]
    plan = plan_groups(aggs, {"epsilon": "1"}, max_units=100, nulls=IMPUTE, bounds=Bounds(1, c))
    assert [p.key.label for p in plan.parts] == ["pair"]
    assert plan.shares[plan.parts[0].key.text()] == Fraction(2, 3) and plan.shares["q"] == Fraction(1, 3)


def test_a_sum_centred_on_the_count_keeps_the_rows_part_for_the_count_too() -> None:
    aggs = [COUNT, {"name": "s", "kind": "sum", "column": "x", "lo": "-2", "hi": "5", "scale_bits": 0}, _mean("10")]
    plan = plan_groups(aggs, {"epsilon": "1"}, max_units=50, nulls=IMPUTE)
    assert plan.basis["n"].form == "count" and plan.basis["s"].form == "centred"
    assert plan.basis["s"].parts[0] == plan.basis["n"].parts[0]
