"""The private join's per-unit truncation and join (Arrow side): a unit's joined rows are a function of its own
rows in both tables, at most L_left * L_right of them, whatever the row order; the stage then bounds them."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dpspark.mechanisms.groups.aggregates import GroupsError, parse_aggregates
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.private_join import PrivateJoin, parse_private_join
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.mechanisms.groups.truncate_units import truncate
from dpspark.universe import CategoricalUniverse

SECRET = bytes(range(16))


def orders(seed: int = 1, units: int = 25) -> pa.Table:
    rng = random.Random(seed)
    rows = [(u, rng.choice([None, 1.5, -0.0, 0.0, 2.25, float(rng.randint(0, 9))]), rng.choice(["a", "b", None]))
            for u in range(units) for _ in range(rng.randint(0, 9))]
    rows.append((None, 1.0, "a"))  # a NULL unit matches nothing
    return pa.table({"cid": pa.array([r[0] for r in rows], pa.int64()), "amount": pa.array([r[1] for r in rows]),
                     "channel": pa.array([r[2] for r in rows])})


def users(seed: int = 2, units: int = 30) -> pa.Table:
    rng = random.Random(seed)
    rows = [(u, rng.choice(["n", "s", "e"])) for u in range(units) for _ in range(rng.choice([0, 1, 1, 1, 2, 4]))]
    return pa.table({"cid": pa.array([r[0] for r in rows], pa.int64()), "region": [r[1] for r in rows]})


def _rows(t: pa.Table) -> Counter:
    return Counter(tuple(r.values()) for r in t.to_pylist())


def _shuffled(t: pa.Table, seed: int) -> pa.Table:
    idx = list(range(t.num_rows))
    random.Random(seed).shuffle(idx)
    return t.take(pa.array(idx, pa.int64()))


@pytest.mark.parametrize("limit", [1, 2, 4])
def test_truncation_keeps_at_most_l_rows_per_unit_whatever_the_order(limit: int) -> None:
    t = orders()
    kept = truncate(t, "cid", limit)
    per_unit = Counter(kept.column("cid").to_pylist())
    have = Counter(t.column("cid").to_pylist())
    assert all(per_unit[u] == min(limit, have[u]) for u in have if u is not None) and None not in per_unit
    for seed in range(5):  # the kept rows do not depend on the input order (both engines see other orders)
        assert _rows(truncate(_shuffled(t, seed), "cid", limit)) == _rows(kept)


def _neighbour_ok(t: pa.Table) -> bool:
    """Removing any unit u changes the kept rows by exactly u's kept rows (the neighbour property)."""
    kept = _rows(truncate(t, "cid", 2))
    for u in range(25):
        rest = t.filter(pc.fill_null(pc.not_equal(t.column("cid"), u), True))
        mine = _rows(truncate(t.filter(pc.fill_null(pc.equal(t.column("cid"), u), False)), "cid", 2))
        if _rows(truncate(rest, "cid", 2)) + mine != kept:
            return False
    return True


def test_a_units_kept_rows_depend_on_its_own_rows_only() -> None:
    assert _neighbour_ok(orders())


def test_a_rank_mutant_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranking rows over the whole table instead of within their unit breaks the neighbour property."""
    import numpy as np

    from dpspark.mechanisms.groups import truncate_units

    monkeypatch.setattr(truncate_units, "rank_in_unit", lambda table, unit, cols: np.arange(table.num_rows) // 3)
    assert not _neighbour_ok(orders())


@pytest.mark.parametrize("how", ["inner", "left"])
@pytest.mark.parametrize("lims", [(1, 1), (2, 3), (1000, 1000)])
def test_joined_rows_per_unit_are_at_most_the_product(how: str, lims: tuple[int, int]) -> None:
    j = PrivateJoin(users(), ("cid",), how, lims, "users").narrowed(["region", "amount", "channel", "cid"])
    left = orders().select(list(j.left_columns))
    out = j.arrow(left)
    per_unit = Counter(out.column("cid").to_pylist())
    lo, ro = Counter(left.column("cid").to_pylist()), Counter(users().column("cid").to_pylist())
    for u, n in per_unit.items():
        right = min(ro[u], lims[1]) or (1 if how == "left" else 0)
        assert n == min(lo[u], lims[0]) * right <= lims[0] * max(lims[1], 1)
    assert out.num_rows > 0 and set(out.column_names) == {"cid", "amount", "channel", "region"}
    if how == "inner":
        assert set(per_unit) <= set(ro)


def test_the_stage_bounds_each_unit_after_the_private_join() -> None:
    """Removing one unit (its rows in both tables) changes at most k groups by at most c rows each."""
    aggs = parse_aggregates([{"name": "n", "kind": "count"},
                             {"name": "s", "kind": "sum", "column": "amount", "lo": "0", "hi": "10"}])

    def stats(o: pa.Table, u: pa.Table) -> dict[Any, tuple[int, ...]]:
        j = PrivateJoin(u, ("cid",), "inner", (3, 2), "users").narrowed(["region", "amount", "cid"])
        st = GroupsStage(("region",), CategoricalUniverse(("n", "s", "e"), "region"), "cid", 1000, 2, 2, aggs,
                         join=j)
        return {g.key: g.stats["n"][0] for g in groups_on(o.select(["cid", "amount"]), st, SECRET)}

    o, u = orders(), users()
    full = stats(o, u)
    assert stats(_shuffled(o, 1), _shuffled(u, 2)) == full  # order-free
    for unit in range(30):
        drop = stats(o.filter(pc.fill_null(pc.not_equal(o.column("cid"), unit), True)),
                     u.filter(pc.not_equal(u.column("cid"), unit)))
        diffs = [full.get(g, 0) - drop.get(g, 0) for g in set(full) | set(drop)]
        assert all(0 <= d <= 2 for d in diffs) and sum(d > 0 for d in diffs) <= 2


@pytest.mark.parametrize("raw, words", [
    ({"table": users(), "on": ["cid", "region"], "private": True}, "unit column only"),
    ({"table": users(), "on": "cid", "private": True, "max_rows_per_unit": 0}, "max_rows_per_unit"),
    ({"table": users(), "on": "cid", "private": True, "how": "full"}, "how"),
    ({"table": users(), "on": "nope", "private": True}, "no unit column 'nope'"),
    ({"table": users(), "path": "x.parquet", "on": "cid", "private": True}, "table = <a table> or path"),
    ({"table": users(), "on": "cid", "private": True, "bogus": 1}, "unknown field"),
])
def test_malformed_private_joins_are_refused(raw: dict[str, Any], words: str) -> None:
    with pytest.raises(GroupsError, match=words):
        parse_private_join(raw)


def test_the_manifest_states_public_parameters_only() -> None:
    d = PrivateJoin(users(), ("cid",), "inner", (5, 2), "users").describe()
    assert d["private"] is True and d["max_rows_per_unit"] == [5, 2] and "at most 10 joined rows" in d["bound"]
    assert "rows" not in d and "sha256" not in d  # the other table is data: no size, no digest
