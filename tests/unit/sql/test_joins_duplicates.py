"""Public joins whose table repeats a join key: the multiplicity m is public and stated, a unit's rows are
bounded after the join (k groups, c rows each: the bound the laws are calibrated on), and without a unit
column (every row its own, untruncated unit) m > 1 is refused before the spend."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from dpspark.mechanisms.groups.aggregates import parse_aggregates
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.join import PublicJoin
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.universe import CategoricalUniverse

SECRET = bytes(range(16))
ZONES = ("cold", "warm", "mild")
#: store 1 is in three zones, twice in "cold": m = 3
DIM = pa.table({"store": [1, 1, 1, 2, 3, None], "zone": ["cold", "cold", "warm", "warm", "mild", "cold"]})


def private_rows(units: int = 30, seed: int = 5) -> pa.Table:
    rng = random.Random(seed)
    rows = [(u, rng.choice([1, 1, 2, 3])) for u in range(units) for _ in range(rng.randint(1, 6))]
    return pa.table({"u": pa.array([r[0] for r in rows], pa.int64()), "store": pa.array([r[1] for r in rows], pa.int64()),
                     "x": pa.array([1.0] * len(rows))})


def stage(k: int, c: int, unit: str | None = "u") -> GroupsStage:
    aggs = parse_aggregates([{"name": "n", "kind": "count"}])
    return GroupsStage(("zone",), CategoricalUniverse(ZONES, "zone"), unit, 10_000, k, c, aggs,
                       join=PublicJoin(DIM, ("store",)))


def counts(table: pa.Table, st: GroupsStage) -> dict[int, int]:
    return {g.key: g.stats["n"][0] for g in groups_on(table, st, SECRET)}


def test_the_multiplicity_is_public_and_stated() -> None:
    j = PublicJoin(DIM, ("store",))
    assert j.multiplicity == 3  # the NULL key matches nothing and is not counted
    assert j.describe()["multiplicity"] == 3 and "after the join" in j.describe()["bound"]
    assert PublicJoin(DIM.slice(3, 3), ("store",)).multiplicity == 1
    assert "multiplicity" not in PublicJoin(DIM.slice(3, 3), ("store",)).describe()  # unique: as before


@pytest.mark.parametrize("k, c", [(1, 1), (2, 2), (3, 5)])
def test_each_unit_is_bounded_after_the_join(k: int, c: int) -> None:
    """Removing any one unit changes at most k groups by at most c rows each (the calibrated bound), though
    its joined rows (up to m = 3 per row) exceed it; and the join did multiply rows (the bound bites)."""
    data, st = private_rows(), stage(k, c)
    full = counts(data, st)
    unbounded = counts(data, stage(3, 10_000))
    assert sum(unbounded.values()) > sum(pa.compute.count(data.column("u")).as_py() for _ in [0])  # m copies rows
    for u in range(30):
        rest = data.filter(pa.compute.not_equal(data.column("u"), u))
        less = counts(rest, st)
        diffs = [full.get(g, 0) - less.get(g, 0) for g in set(full) | set(less)]
        assert all(0 <= d <= c for d in diffs) and sum(d > 0 for d in diffs) <= k


def test_without_a_unit_one_row_adds_m_rows() -> None:
    """Why m > 1 needs a unit column: every joined row is then its own untruncated unit, so removing one
    private row (store 1: three public rows) moves the counts by m = 3 > k c = 1, the calibrated bound."""
    data = private_rows()
    st = stage(1, 1, unit=None)
    one = data.filter(pa.compute.equal(data.column("store"), 1)).slice(0, 1)
    rest = pa.concat_tables([data.filter(pa.compute.not_equal(data.column("store"), 1)),
                             data.filter(pa.compute.equal(data.column("store"), 1)).slice(1)])
    assert sum(counts(data, st).values()) - sum(counts(rest, st).values()) == 3
    assert counts(one, st) == {0: 2, 1: 1}


def _session(tmp_path: Path, unit: str | None) -> Any:
    import dpspark
    from dpspark.ledger import Ledger
    from dpspark.rng import SeededRandom

    Ledger(tmp_path / "ledger.db").set_total("shop", "10", "1e-6")
    data = pa.table({"u": pa.array(range(40), pa.int64()), "store": pa.array([1, 2, 3, 1] * 10, pa.int64())})
    return dpspark.Session(data, max_units=1000, unit_column=unit, rng=SeededRandom(3),
                           ledger=tmp_path / "ledger.db", dataset="shop")


def _groups(s: Any, tmp_path: Path) -> Any:
    return s.groups(by=["zone"], keys=list(ZONES), epsilon="1", output=tmp_path / "rel",
                    aggregates=[{"name": "n", "kind": "count"}], join={"table": DIM, "on": ["store"]})


def test_without_a_unit_column_duplicate_keys_are_refused_before_the_spend(tmp_path: Path) -> None:
    from dpspark.ledger import Ledger

    with _session(tmp_path, None) as s:
        with pytest.raises(Exception, match="up to 3 times.*declare the unit column"):
            _groups(s, tmp_path)
    assert Ledger(tmp_path / "ledger.db").releases("shop") == [] and not (tmp_path / "rel").exists()


def test_a_mutant_that_ignores_m_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With m read as 1 the refusal above is skipped and the release spends: the refusal test has teeth."""
    from dpspark.ledger import Ledger

    monkeypatch.setattr(PublicJoin, "multiplicity", property(lambda self: 1))
    with _session(tmp_path, None) as s:
        _groups(s, tmp_path)
    assert len(Ledger(tmp_path / "ledger.db").releases("shop")) == 1


def test_with_a_unit_column_duplicate_keys_release_and_state_m(tmp_path: Path) -> None:
    with _session(tmp_path, "u") as s:
        rel = _groups(s, tmp_path)
    assert sorted(rel.keys()) == sorted(ZONES)
    manifest = (tmp_path / "rel" / "manifest.json").read_text()
    assert '"multiplicity": 3' in manifest
