"""The Arrow groups kernel against the plain-Python reference: bounding, nulls, universes, exact sums."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest

from dpspark.engine.errors import CuratorError
from dpspark.engine.numeric import NullRule
from dpspark.mechanisms.groups import core
from dpspark.mechanisms.groups.aggregates import parse_aggregates
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.universe import CategoricalUniverse, HashedUniverse, IntRangeUniverse, TupleUniverse
from tests.unit.groups.reference_stats import reference

SECRET = bytes(range(16))
AGGS = parse_aggregates([
    {"name": "n", "kind": "count"},
    {"name": "s", "kind": "sum", "column": "x", "lo": "-3", "hi": "5", "scale_bits": 4},
    {"name": "m", "kind": "mean", "column": "y", "lo": "0", "hi": "10"},
    {"name": "v", "kind": "variance", "column": "x", "lo": "-3", "hi": "5", "scale_bits": 4},
    {"name": "q", "kind": "quantile", "column": "y", "lo": "0", "hi": "10", "q": "1/2", "bins": 7},
])
KEYS = ["a", "b", "c", "d", "e", "f"]


def _value(rng: random.Random) -> float | None:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.13:
        return rng.choice([float("inf"), float("-inf"), float("nan"), 1e300, -0.0])
    return rng.choice([round(rng.uniform(-6, 12), 2), rng.randint(-4, 11) + 0.5, 1 / 3])


def table(seed: int, rows: int = 300, units: int = 12, oov: bool = True) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    keys = KEYS + (["zz"] if oov else [])
    out = []
    for _ in range(rows):
        out.append({"k": None if rng.random() < 0.03 else rng.choice(keys[: rng.randint(1, len(keys))]),
                    "u": None if rng.random() < 0.02 else rng.randrange(units),
                    "x": _value(rng), "y": _value(rng)})
    return out


def arrow(rows: list[dict[str, Any]], extra: dict[str, pa.DataType] | None = None) -> pa.Table:
    types = {"k": pa.string(), "u": pa.int64(), "x": pa.float64(), "y": pa.float64(), **(extra or {})}
    names = list(rows[0])
    return pa.table({c: pa.array([r[c] for r in rows], types[c]) for c in names})


def stage(**kw: Any) -> GroupsStage:
    base = dict(key_columns=("k",), universe=CategoricalUniverse(tuple(KEYS), "k"), unit_column="u", max_units=100,
                max_groups_per_unit=2, max_rows_per_group=3, aggregates=AGGS, count_units=True,
                nulls=(("y", NullRule(Fraction(7, 2))),))
    base.update(kw)
    return GroupsStage(**base)


CASES = [
    dict(),
    dict(max_units=5),                                        # > n units: truncation
    dict(max_groups_per_unit=1, max_rows_per_group=1),
    dict(max_groups_per_unit=6, max_rows_per_group=100),      # nothing bounded
    dict(nulls=()),                                           # drop rule everywhere
    dict(unit_column=None, max_units=10_000),
    dict(unit_column=None, max_units=40),                     # rows are units: row truncation
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_reference(seed: int, case: int) -> None:
    st = stage(**CASES[case])
    rows = table(seed)
    got = groups_on(arrow(rows), st, SECRET)
    assert got == reference(rows, st, SECRET)
    assert [g.key for g in got] == sorted(g.key for g in got)


def test_bounding_rules_bite() -> None:
    rows = [{"k": KEYS[i % 6], "u": 0, "x": 1.0, "y": 1.0} for i in range(60)]  # one unit, 6 groups, 10 rows each
    st = stage(max_groups_per_unit=4, max_rows_per_group=3)
    got = groups_on(arrow(rows), st, SECRET)
    assert len(got) == 4 and all(g.stats["n"] == (3,) and g.units == 1 for g in got)
    st = stage(unit_column=None, max_units=25)
    got = groups_on(arrow(rows), st, SECRET)
    assert sum(g.stats["n"][0] for g in got) == 25


def test_mutant_without_bounding_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    rows = table(1)
    st = stage()
    monkeypatch.setattr(core, "bound", lambda part, stage, secret: (np.ones(part.rows, bool),
                                                                    np.bincount(part.gid, minlength=len(part.words))))
    assert groups_on(arrow(rows), st, SECRET) != reference(rows, st, SECRET)


def test_out_of_universe_error_is_value_free() -> None:
    rows = table(2)
    with pytest.raises(CuratorError) as err:
        groups_on(arrow(rows), stage(out_of_universe="error"), SECRET)
    assert "zz" not in str(err.value)
    clean = table(2, oov=False)
    assert groups_on(arrow(clean), stage(out_of_universe="error"), SECRET) == reference(clean, stage(), SECRET)


def test_tuple_keys_and_string_units() -> None:
    rng = random.Random(7)
    rows = [{"a": rng.randrange(-1, 5), "b": rng.choice(["p", "q", "r"]), "u": f"u{rng.randrange(9)}",
             "x": _value(rng)} for _ in range(250)]
    uni = TupleUniverse((IntRangeUniverse(0, 3, "a"), CategoricalUniverse(("p", "q"), "b")))
    aggs = parse_aggregates([{"name": "n", "kind": "count"},
                             {"name": "v", "kind": "variance", "column": "x", "lo": "-1", "hi": "2"}])
    st = GroupsStage(("a", "b"), uni, "u", 6, 2, 2, aggs, count_units=True)
    tab = arrow(rows, {"a": pa.int64(), "b": pa.string(), "u": pa.string()})
    assert groups_on(tab, st, SECRET) == reference(rows, st, SECRET, pa.string())


def test_hashed_huge_universe() -> None:
    rng = random.Random(9)
    rows = [{"k": f"key{rng.randrange(40)}", "u": rng.randrange(20), "x": _value(rng), "y": _value(rng)}
            for _ in range(400)]
    st = stage(universe=HashedUniverse(200, "string", "k"), nulls=())
    got = groups_on(arrow(rows), st, SECRET)
    assert got == reference(rows, st, SECRET)
    assert any(g.key >= 1 << 128 for g in got)


def test_wide_bounds_take_the_exact_slow_path() -> None:
    rng = random.Random(3)
    rows = [{"k": rng.choice(KEYS), "u": rng.randrange(5), "x": rng.choice([None, 2.0 ** 60, -3.5, 1e30]),
             "y": 1.0} for _ in range(60)]
    aggs = parse_aggregates([{"name": "v", "kind": "variance", "column": "x", "lo": str(-(2 ** 59)),
                              "hi": str(2 ** 59), "scale_bits": 2},
                             {"name": "s", "kind": "sum", "column": "x", "lo": "-4", "hi": str(2 ** 40),
                              "scale_bits": 20}])
    st = stage(aggregates=aggs, nulls=())
    got = groups_on(arrow(rows), st, SECRET)
    assert got == reference(rows, st, SECRET)


def test_exact_bincount_limbs() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    v = rng.integers(-(1 << 51), 1 << 51, size=5000)
    ids = rng.integers(0, 7, size=5000)
    parts = core.exact_bincount(ids, v, 7, 1 << 51)
    got = [sum(int(a[i]) << s for a, s in parts) for i in range(7)]
    assert got == [sum(int(x) for x, j in zip(v, ids) if j == i) for i in range(7)]
    sq = core.square_parts(ids, v, 7, 1 << 51)
    got = [sum(int(a[i]) << s for a, s in sq) for i in range(7)]
    assert got == [sum(int(x) ** 2 for x, j in zip(v, ids) if j == i) for i in range(7)]
