"""Issue 34 §4: several quantiles of one column in one groups release use ONE joint law per group (joint_family.py):
the public rule, the summed share, the manifest's statement, the shared draw, and the face's columns."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpspark.lookup import open_release
from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.algorithm import GroupStats, plan_groups, release_planned
from dpspark.mechanisms.groups.joint_family import JointMember
from dpspark.mechanisms.groups.quantile import QuantileLaw
from dpspark.rng import SeededRandom
from tests.unit.groups.test_face import raw_config, write


def _q(name: str, q: str, bins: int = 8, column: str = "x", **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "quantile", "column": column, "lo": "0", "hi": "8", "q": q, "bins": bins, **extra}


QUARTILES = [{"name": "n", "kind": "count"}, _q("q3", "3/4"), _q("q1", "1/4"), _q("med", "1/2")]


def _plan(aggs: list[dict[str, Any]], eps: str = "1") -> Any:
    return plan_groups(aggs, {"epsilon": eps}, max_units=1000)


def test_quartiles_of_one_column_share_one_law_and_the_summed_share() -> None:
    plan = _plan(QUARTILES)
    members = [plan.laws[n] for n in ("q1", "med", "q3")]
    assert all(isinstance(m, JointMember) and m.law is members[0].law for m in members)
    assert [m.index for m in members] == [0, 1, 2] and members[0].names == ("q3", "q1", "med")
    law = members[0].law
    assert law.qs == [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)]
    # the family runs at the three quantiles' shares summed; the count keeps its own
    total = sum((plan.shares[n] for n in ("q1", "med", "q3")), Fraction(0))
    assert law.epsilon().le(total) and not law.epsilon().le(total * Fraction(99, 100))
    assert plan.statement.measure.epsilon.le(Fraction(1))
    joint = [s for s in plan.statements if "joint exponential" in s.theorem]
    assert len(joint) == 1 and len(plan.statements) == 2  # the count and ONE statement for the family
    assert plan.errors["q1"] == plan.errors["med"] == plan.errors["q3"] == law.rank_error(plan.beta)
    rows = {r["name"]: r for r in plan.describe()["aggregates"]}
    assert rows["med"]["noise"] == "joint_exponential_mechanism" and rows["med"]["law"]["joint_with"] == [
        "q3", "q1", "med"]


def test_the_rule_is_public_and_independent_stays_available() -> None:
    ind = _plan([_q("a", "1/4", quantiles="independent"), _q("b", "3/4")])
    assert all(isinstance(ind.laws[n], QuantileLaw) for n in "ab")  # b alone: nothing to join
    other_col = _plan([_q("a", "1/4"), _q("b", "3/4", column="y")])
    assert all(isinstance(other_col.laws[n], QuantileLaw) for n in "ab")
    other_grid = _plan([_q("a", "1/4"), _q("b", "3/4", bins=16)])
    assert all(isinstance(other_grid.laws[n], QuantileLaw) for n in "ab")
    big = [_q(f"p{i}", f"{i}/5", bins=256) for i in range(1, 5)]  # C(260, 4) tuples: too many, auto stays independent
    assert all(isinstance(law, QuantileLaw) for law in _plan(big).laws.values())
    with pytest.raises(GroupsError, match="cannot be released jointly"):
        _plan([{**big[0], "quantiles": "joint"}, *big[1:]])
    three = [_q(f"p{i}", f"{i}/4", bins=256) for i in range(1, 4)]  # C(259, 3) = 2.86 M: above the auto limit
    assert all(isinstance(law, QuantileLaw) for law in _plan(three).laws.values())
    forced = _plan([{**three[0], "quantiles": "joint"}, *three[1:]])  # below MAX_TUPLES: joint on request
    assert all(isinstance(law, JointMember) for law in forced.laws.values())
    with pytest.raises(GroupsError, match="only quantile"):
        _plan([_q("a", "1/4", quantiles="joint")])
    with pytest.raises(GroupsError, match="same q"):
        _plan([_q("a", "1/4", quantiles="joint"), _q("b", "1/4")])
    with pytest.raises(GroupsError, match="quantiles must be one of"):
        _plan([_q("a", "1/4", quantiles="together")])
    with pytest.raises(GroupsError, match="applies only"):
        _plan([{"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "quantiles": "joint"}])


def _cells(values: list[int]) -> tuple[int, ...]:
    out = [0] * 9
    for v in values:
        out[v] += 1
    return tuple(out)


STATS = [GroupStats(0, {"n": (6,), **{k: _cells([1, 2, 2, 5, 7, 8]) for k in ("q3", "q1", "med")}}),
         GroupStats(1, {"n": (0,), **{k: _cells([]) for k in ("q3", "q1", "med")}})]


def test_one_draw_per_group_is_read_by_every_member() -> None:
    plan = _plan(QUARTILES, eps="8")
    rel = release_planned(plan, STATS, SeededRandom(5), keys=[0, 1])
    law = plan.laws["med"].law
    rng = SeededRandom(5)
    count = plan.noises[0].law.release_many([6, 0], rng)  # the count draws first (plan order), then the family
    assert len(count) == 2
    for g, stats in zip(rel.values, STATS):
        o = law.draw(list(stats.stats["med"]), rng)
        assert [g[n].value for n in ("q1", "med", "q3")] == [Fraction(x) for x in o]  # grid 0..8: v_j = j
        assert all(g[n].error == plan.errors[n] and g[n].error_unit == "rank_rows" for n in ("q1", "med", "q3"))


STATS_FACE = [GroupStats(0, {"n": (800,), **{k: (0, 0, 0, 200, 400, 200, 0, 0, 0) for k in ("q3", "q1", "med")}}),
              GroupStats(2, {"n": (1,), **{k: (0, 0, 0, 0, 0, 0, 0, 0, 1) for k in ("q3", "q1", "med")}})]


def test_face_states_each_member_with_its_bar_and_flag(tmp_path: Path) -> None:
    out, released, mech = write(tmp_path, raw_config(tmp_path, aggs=QUARTILES), STATS_FACE)
    frame = open_release(out).to_pandas()
    for n in ("q1", "med", "q3"):
        assert f"{n}_rank_error" in frame.columns and f"{n}_uninformative" in frame.columns
    first = released.values[0]
    assert first["q1"].value <= first["med"].value <= first["q3"].value
    assert 3 <= first["med"].value <= 5  # 800 rows: the bar is a few rows, the median cell is 4


def test_manifest_names_the_joint_mechanism(tmp_path: Path) -> None:
    import json

    out, _, _ = write(tmp_path, raw_config(tmp_path, aggs=QUARTILES), STATS_FACE)
    text = json.dumps(json.loads((out / "manifest.json").read_text()))
    assert text.count("joint_exponential_mechanism") >= 3 and "joint_with" in text
