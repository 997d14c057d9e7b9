"""The Spark groups kernel equals the Arrow kernel (and the reference) for the same secret."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.spark_stats import _read as _REAL_READ
from dpspark.mechanisms.groups.spark_stats import groups_spark
from dpspark.universe import HashedUniverse
from tests.unit.groups.reference_stats import reference
from tests.unit.groups.test_stats_arrow import CASES, SECRET, arrow, stage, table

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("case", range(len(CASES)))
def test_spark_equals_arrow(spark: Any, case: int) -> None:
    rows = table(case)
    st = stage(**CASES[case])
    tab = arrow(rows)
    df = spark.createDataFrame([tuple(r[c] for c in ("k", "u", "x", "y")) for r in rows],
                               schema="k string, u long, x double, y double")
    got = groups_spark(df, st, SECRET)
    assert got == groups_on(tab, st, SECRET) == reference(rows, st, SECRET)


def test_spark_hashed_universe_and_errors(spark: Any) -> None:
    from dpspark.engine.errors import CuratorError

    rows = table(11)
    df = spark.createDataFrame([tuple(r[c] for c in ("k", "u", "x", "y")) for r in rows],
                               schema="k string, u long, x double, y double")
    st = stage(universe=HashedUniverse(200, "string", "k"))
    assert groups_spark(df, st, SECRET) == groups_on(arrow(rows), st, SECRET)
    with pytest.raises(CuratorError):
        groups_spark(df, stage(out_of_universe="error"), SECRET)


def test_backends_agree_for_one_seed(spark: Any) -> None:
    from dpspark.engine.backend import open_backend
    from dpspark.rng import SeededRandom

    rows = table(21)
    st = stage(max_units=6)
    df = spark.createDataFrame([tuple(r[c] for c in ("k", "u", "x", "y")) for r in rows],
                               schema="k string, u long, x double, y double")
    with open_backend("spark", rng=SeededRandom(8), data=df) as sb:
        on_spark = sb.compute(st)
        assert sb.passes_run == 1
    with open_backend("arrow", rng=SeededRandom(8), source=arrow(rows)) as ab:
        assert ab.compute(st) == on_spark


def _df(spark: Any, rows: list[dict[str, Any]], schema: str) -> Any:
    names = [part.split()[0] for part in schema.split(",")]
    return spark.createDataFrame([tuple(r[c] for c in names) for r in rows], schema=schema)


def test_spark_tuple_keys_string_units_and_wide_bounds(spark: Any) -> None:
    import random

    from dpspark.mechanisms.groups.aggregates import parse_aggregates
    from dpspark.mechanisms.groups.stage import GroupsStage
    from dpspark.universe import CategoricalUniverse, IntRangeUniverse, TupleUniverse

    rng = random.Random(7)
    rows = [{"a": rng.randrange(-1, 5), "b": rng.choice(["p", "q", "r"]), "u": f"u{rng.randrange(9)}",
             "x": rng.choice([None, 2.0 ** 60, -3.5, 1e30, float("nan"), float("-inf"), 0.25])} for _ in range(250)]
    uni = TupleUniverse((IntRangeUniverse(0, 3, "a"), CategoricalUniverse(("p", "q"), "b")))
    aggs = parse_aggregates([{"name": "n", "kind": "count"},
                             {"name": "v", "kind": "variance", "column": "x", "lo": str(-(2 ** 59)),
                              "hi": str(2 ** 59), "scale_bits": 2},
                             {"name": "q", "kind": "quantile", "column": "x", "lo": "-4", "hi": "4", "q": "1/4"}])
    st = GroupsStage(("a", "b"), uni, "u", 6, 2, 2, aggs, count_units=True)
    tab = arrow(rows, {"a": pa.int64(), "b": pa.string(), "u": pa.string()})
    got = groups_spark(_df(spark, rows, "a long, b string, u string, x double"), st, SECRET)
    assert got == groups_on(tab, st, SECRET) == reference(rows, st, SECRET, pa.string())


def test_spark_text_values_as_on_arrow(spark: Any) -> None:
    rows = table(8)
    text = [{**r, "x": None if r["x"] is None else repr(r["x"]), "y": None if r["y"] is None else f"{r['y']}"}
            for r in rows]
    for r, t in zip(text[:8], ["1e400", "-1e400", "NaN", "abc", "+.5", "-0", "1e-400", "0x10"]):
        r["x"] = t
    st = stage()
    tab = arrow(text, {"x": pa.string(), "y": pa.string()})
    got = groups_spark(_df(spark, text, "k string, u long, x string, y string"), st, SECRET)
    assert got == groups_on(tab, st, SECRET)


def _collide(monkeypatch: pytest.MonkeyPatch, twin: Any, ha: int) -> None:
    """Give unit ``twin`` the xxhash64 ``ha`` in the Spark read and in the reference (a forced collision)."""
    import numpy as np
    from pyspark.sql import functions as F

    from dpspark.engine.arrow.counts import spark_hash
    from dpspark.mechanisms.groups import spark_stats
    from tests.unit.groups import reference_stats

    def colliding_read(df: Any, stage_: Any) -> Any:
        return _REAL_READ(df, stage_).withColumn(spark_stats.UNIT_HASH, F.when(F.col("u") == twin, F.lit(ha))
                                                .otherwise(F.col(spark_stats.UNIT_HASH)))

    def colliding_hash(values: Any, *args: Any, **kw: Any) -> Any:
        out = spark_hash(values, *args, **kw)
        for i, u in enumerate(values.to_pylist()):
            if u == twin:
                out[i] = np.int64(ha).view(np.uint64)
        return out

    monkeypatch.setattr(spark_stats, "_read", colliding_read)
    monkeypatch.setattr(reference_stats, "spark_hash", colliding_hash)


def _boundary_twins() -> tuple[Any, int, Any]:
    """(unit a, at the 6th pair of table(6); its xxhash64; a unit b past it to collide with a)."""
    from tests.unit.groups.test_spark_partitions import _unit_ranks, _with_unit_hash

    ranks = _unit_ranks(_with_unit_hash(arrow(table(6)), stage(max_units=6)), stage(max_units=6))
    a, ha = ranks[5][2], ranks[5][1]
    return a, ha, next(u for _h, _uh, u in ranks[7:] if (u < a) == (repr(u) < repr(a)))


def test_spark_unit_collision_at_the_truncation_boundary(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two units with one xxhash64 tie at the n-th pair: exactly n units are kept, the first by value."""
    rows = table(6)
    st = stage(max_units=6)
    _a, ha, b = _boundary_twins()
    _collide(monkeypatch, b, ha)
    df = _df(spark, rows, "k string, u long, x double, y double")
    assert groups_spark(df, st, SECRET) == reference(rows, st, SECRET)


def test_spark_row_truncation_with_copies_of_the_boundary_row(spark: Any) -> None:
    rows = table(7, rows=80, oov=False)
    for r in rows[:30]:
        r.update(k="b", x=2.5, y=None)
    from tests.unit.groups.test_spark_partitions import _row_order, _with_unit_hash

    order = _row_order(_with_unit_hash(arrow(rows), stage(unit_column=None)), stage(unit_column=None))
    same = [i for i, o in enumerate(order) if order.count(o) == 30]
    df = _df(spark, rows, "k string, u long, x double, y double")
    for n in (same[0] + 12, same[-1] + 2):  # the n-th row one of 30 copies, or past them
        st = stage(unit_column=None, max_units=n)
        got = groups_spark(df, st, SECRET)
        assert got == groups_on(arrow(rows), st, SECRET) == reference(rows, st, SECRET)
        assert sum(g.stats["n"][0] for g in got) == n


def test_spark_empty_input_and_all_null_keys(spark: Any) -> None:
    rows = [{"k": None, "u": 1, "x": 1.0, "y": 2.0}, {"k": "a", "u": None, "x": 1.0, "y": 2.0}]
    df = _df(spark, rows, "k string, u long, x double, y double")
    for st in (stage(), stage(unit_column=None, max_units=1)):  # the second: the row cut keeps one row
        assert groups_spark(df, st, SECRET) == groups_on(arrow(rows), st, SECRET)
        assert groups_spark(df.limit(0), st, SECRET) == []
    assert len(groups_spark(df, stage(unit_column=None, max_units=1), SECRET)) == 1


def test_the_unit_cut_runs_the_same_jobs_whatever_the_units(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 4: the same DataFrame calls in the same order whether the input holds more units than max_units or
    not, and whether two units' xxhash64 collide at the boundary (main ran three more jobs on a collision and
    skipped the cut in the partitions at most n units); the values still equal the reference."""
    rows = table(6)
    _a, ha, b = _boundary_twins()
    df = _df(spark, rows, "k string, u long, x double, y double")
    calls: list[str] = []
    for name in ("collect", "toArrow", "count", "mapInArrow", "orderBy", "sort", "limit", "groupBy", "distinct",
                 "filter", "withColumn", "repartition", "join"):
        real = getattr(type(df), name)  # the session's DataFrame class (classic or Connect)

        def spy(self: Any, *args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            calls.append(_name)
            return _real(self, *args, **kw)

        monkeypatch.setattr(type(df), name, spy)
    traces = []
    for n, twin in ((6, -1), (6, b), (10_000, -1)):  # twin: the unit given a's xxhash64 (-1: no unit)
        _collide(monkeypatch, twin, ha)
        calls.clear()
        st = stage(max_units=n)
        assert groups_spark(df, st, SECRET) == reference(rows, st, SECRET)
        traces.append(list(calls))
    assert traces[0] == traces[1] == traces[2]
    assert traces[0].count("collect") + traces[0].count("toArrow") == 3  # histogram, the bin's units, the pass
