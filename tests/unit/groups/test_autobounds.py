"""Bounds chosen privately in the groups family (mechanisms/groups/autobounds.py), on the Arrow engine.

The spec side (parse, charge, statement), the pre-pass's sensitivity on the real stage, the stated bounds and
their clipped-rows bound against the truth, and SQL <-> Session.groups equality under one seed.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dpspark.bounds import CELLS
from dpspark.mechanisms.groups.aggregates import GroupsError, parse_aggregate
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.autobounds import bit_cells
from dpspark.mechanisms.groups.config import parse_groups_section
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.rng import SeededRandom
from dpspark.universe import CategoricalUniverse

SEED = 5
KEYS = ["AA", "B6", "UA"]


def frame(n: int = 20_000) -> Any:
    import pandas as pd

    rng = np.random.default_rng(2)
    return pd.DataFrame({"carrier": rng.choice(KEYS, n), "user": rng.integers(0, n // 4, n),
                         "v": rng.integers(0, 100, n).astype(float), "d": rng.normal(10, 30, n).round(1)})


AGGS = [{"name": "n", "kind": "count"}, {"name": "vs", "kind": "sum", "column": "v"},
        {"name": "vm", "kind": "mean", "column": "v"}, {"name": "dm", "kind": "mean", "column": "d"},
        {"name": "dq", "kind": "quantile", "column": "d", "q": "1/2"}]


def test_parse_auto_and_its_refusals() -> None:
    agg = parse_aggregate({"name": "s", "kind": "sum", "column": "x"})
    assert agg.auto and agg.describe()["lo"] == "chosen privately"
    assert not parse_aggregate({"name": "s", "kind": "sum", "column": "x", "lo": 0, "hi": 9}).auto
    with pytest.raises(GroupsError, match="give both lo and hi"):
        parse_aggregate({"name": "s", "kind": "sum", "column": "x", "lo": 0})
    with pytest.raises(GroupsError, match="scale_bits"):
        parse_aggregate({"name": "s", "kind": "mean", "column": "x", "scale_bits": 4})
    assert parse_groups_section({"by": "k", "keys": ["a"], "bounds_share": "1/5"}).bounds_share == Fraction(1, 5)
    with pytest.raises(TypeError, match="float"):
        parse_groups_section({"by": "k", "keys": ["a"], "bounds_share": 0.2})
    with pytest.raises(GroupsError, match="bounds_share"):
        parse_groups_section({"by": "k", "keys": ["a"], "bounds_share": "1"})


def test_bounds_share_without_auto_aggregates_is_refused_before_the_spend(tmp_path: Path) -> None:
    import dpspark
    from dpspark.engine.plan import ConfigError  # noqa: F401  (the family's spec error is a ConfigError)

    with dpspark.Session(frame(200), max_units=1000, budget={"epsilon": "2"}) as s:
        with pytest.raises(Exception, match="bounds_share applies only"):
            s.groups(by="carrier", keys=KEYS, aggregates=[{"name": "n", "kind": "count"}], epsilon="1",
                     bounds_share="1/5", output=tmp_path / "r")
        assert s.remaining.epsilon.le(Fraction(2)) and not s.remaining.epsilon.le(Fraction(19, 10))


def _prepass(table: pa.Table, k: int, c: int) -> list[int]:
    stage = GroupsStage(key_columns=("carrier",), universe=CategoricalUniverse(tuple(KEYS), "carrier"),
                        unit_column="user", max_units=10_000, max_groups_per_unit=k, max_rows_per_group=c,
                        aggregates=(bit_cells("bounds:0", "v"),))
    total = [0] * CELLS
    for g in groups_on(table, stage, b"\x01" * 16):
        total = [a + int(b) for a, b in zip(total, g.stats["bounds:0"])]
    return total


def test_prepass_histogram_moves_by_at_most_k_c_when_a_unit_is_added() -> None:
    base = pa.Table.from_pandas(frame(2000)[["carrier", "user", "v"]], preserve_index=False)
    rng = np.random.default_rng(3)
    big = pa.table({"carrier": rng.choice(KEYS, 500), "user": np.full(500, 10**6),
                    "v": rng.choice([0.5, 3.0, 70.0, 1e9, -8.0], 500)})
    for k, c in ((1, 1), (2, 3), (3, 5)):
        h0 = _prepass(base, k, c)
        h1 = _prepass(pa.concat_tables([base, big.cast(base.schema)]), k, c)
        moved = sum(abs(a - b) for a, b in zip(h0, h1))
        assert 0 < moved <= k * c  # the pre-pass bounds contributions as the release does


def _bounds(rel: Path) -> dict[str, Any]:
    return json.loads((rel / "manifest.json").read_text())["mechanism"]["parameters"]["bounds"]


def test_release_states_bounds_and_a_clipped_bound_covering_the_truth(tmp_path: Path) -> None:
    import dpspark

    df = frame()
    with dpspark.Session(df, max_units=100_000, budget={"epsilon": "1"}, rng=SeededRandom(SEED)) as s:
        explain = s.groups(by="carrier", keys=KEYS, aggregates=AGGS, epsilon="1", explain=True)
        g = s.groups(by="carrier", keys=KEYS, aggregates=AGGS, epsilon="1", output=tmp_path / "r")
        assert s.remaining.epsilon.le(Fraction(1, 10**5))  # the whole epsilon, bounds included, charged once
    assert "bounds: chosen privately for v, d on 1/10 of epsilon" in explain
    b = _bounds(tmp_path / "r")
    assert b["share"] == "1/10" and set(b["columns"]) == {"v", "d"}
    v = b["columns"]["v"]
    assert Fraction(v["lo"]) == 0 and Fraction(v["hi"]) <= 128 and v["scale_bits"] >= 9
    for col in ("v", "d"):
        row = b["columns"][col]
        lo, hi = float(Fraction(row["lo"])), float(Fraction(row["hi"]))
        clipped = int(((df[col] < lo) | (df[col] > hi)).sum())  # every row kept is a superset: an upper bound
        assert row["rows_clipped_at_most"] >= clipped
    frame_ = g.to_pandas()
    attrs = frame_.attrs["bounds"]  # the same choices, exact, beside the table
    assert attrs["share"] == Fraction(1, 10) and set(attrs["columns"]) == {"v", "d"}
    for col in ("v", "d"):
        a, row = attrs["columns"][col], b["columns"][col]
        assert (a["lo"], a["hi"]) == (Fraction(row["lo"]), Fraction(row["hi"]))
        assert a["scale_bits"] == row["scale_bits"] and a["rows_clipped_at_most"] == row["rows_clipped_at_most"]
        assert a["confidence"] == Fraction(row["clipped_bound_confidence"]) and 0 < a["confidence"] < 1
    out = frame_.set_index("carrier")
    truth = df.groupby("carrier")["v"].mean()
    assert all(abs(out.loc[c, "vm"] - truth[c]) <= out.loc[c, "vm_error"] + 0.01 for c in KEYS)


def test_sql_equals_session_groups_under_one_seed(tmp_path: Path) -> None:
    import pandas as pd

    import dpspark

    df = frame(5000)
    keys = pd.DataFrame({"carrier": KEYS})
    q = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, keys = k) carrier, COUNT(*) AS n, "
         "AVG(v) AS m, SUM(d) AS s, PERCENTILE_CONT(d, 0.5) AS med FROM data GROUP BY carrier")
    with dpspark.Session(tables={"data": df, "k": keys}, public_tables=["k"], max_units=10_000,
                         rng=SeededRandom(SEED)) as s:
        a = s.sql(q, output=tmp_path / "sql").to_pandas()
    aggs = [{"name": "n", "kind": "count"}, {"name": "m", "kind": "mean", "column": "v"},
            {"name": "s", "kind": "sum", "column": "d"}, {"name": "med", "kind": "quantile", "column": "d",
                                                         "q": "0.5"}]
    with dpspark.Session(df, max_units=10_000, rng=SeededRandom(SEED)) as s:
        b = s.groups(by="carrier", keys=KEYS, aggregates=aggs, epsilon="1", output=tmp_path / "api").to_pandas()
    pd.testing.assert_frame_equal(a, b)
    assert _bounds(tmp_path / "sql")["columns"] == _bounds(tmp_path / "api")["columns"]


@pytest.mark.slow  # FastSample's truncation search runs to its limit first (about 25 s)
def test_a_bounds_share_too_small_is_refused_before_the_spend(tmp_path: Path) -> None:
    import dpspark

    with dpspark.Session(frame(200), max_units=10**9, budget={"epsilon": "1"}) as s:
        with pytest.raises(Exception, match="bounds chosen privately.*raise groups.bounds_share"):
            s.groups(by="carrier", keys=KEYS, aggregates=AGGS[:2], epsilon="1/1000", bounds_share="1/1000",
                     output=tmp_path / "r")
        assert s.remaining.epsilon.le(Fraction(1)) and not s.remaining.epsilon.le(Fraction(999, 1000))


def test_candidate_sensitivities_cover_every_limit_the_run_can_reach() -> None:
    from dpspark.mechanisms.groups.autobounds import candidate_sensitivities
    from dpspark.mechanisms.groups.unit_profile import BUCKETS

    assert candidate_sensitivities(3, 0) == []
    one = candidate_sensitivities(3, 1)  # k auto (1 .. 2^(B-1)), c = 3 given; a halved c gives 1 or 2
    assert one == [1, 2, *(3 << i for i in range(BUCKETS))]
    assert candidate_sensitivities(1, 2)[-1] == 1 << 2 * (BUCKETS - 1)


def test_certainly_refused_is_sound_and_tight_at_small_parameters() -> None:
    from dpspark.bounds.histogram import BoundsLaw, certainly_refused

    each = Fraction(1, 10)
    assert not certainly_refused(each, 64, 2000 * 64)
    BoundsLaw(each, 64, 2000 * 64)  # not refused: built
    for delta in (2048, 4096):  # refused: FastSample's search does raise
        assert certainly_refused(each, delta, 2000 * delta)
        with pytest.raises(Exception, match="epsilon is too small"):
            BoundsLaw(each, delta, 2000 * delta)


def test_auto_bounds_with_auto_limits_cap_k_c_at_the_laws_built_before_the_spend(tmp_path: Path) -> None:
    import pandas as pd

    import dpspark

    rng = np.random.default_rng(4)  # every unit has ~64 rows in each of the 3 groups: the limits want k c ~ 256
    n = 60 * 192
    df = pd.DataFrame({"carrier": rng.choice(KEYS, n), "user": rng.integers(0, 60, n),
                       "v": rng.integers(0, 100, n).astype(float)})
    aggs = [{"name": "n", "kind": "count"}, {"name": "vs", "kind": "sum", "column": "v"}]
    kw = dict(by="carrier", keys=KEYS, aggregates=aggs, epsilon="1", max_groups_per_unit="auto",
              max_rows_per_group="auto", bounds_share="1/200")
    # a share whose bounds law FastSample cannot build past k c = 64 at max_units = 200 (data-free: a public cap)
    with dpspark.Session(df, unit_column="user", max_units=200, budget={"epsilon": "1"},
                         rng=SeededRandom(SEED)) as s:
        explain = s.groups(**kw, explain=True)
        g = s.groups(**kw, output=tmp_path / "r")
        assert s.remaining.epsilon.le(Fraction(1, 10**5))  # everything charged once, before the read
    assert "bounds: chosen privately for v" in explain
    b = _bounds(tmp_path / "r")
    lim = g.section["limits"]
    kc = lim["max_groups_per_unit"] * lim["max_rows_per_group"]
    raw = lim["chosen"]
    assert raw["max_groups_per_unit"] * raw["max_rows_per_group"] > 64  # the limits' release asked for more
    assert "at most 64 " in b["limits"] and kc <= 64  # and the chosen limits were halved to the cap
    assert b["columns"]["v"]["law"]["sensitivity"] >= kc  # the law used covers the pass's k c
    assert g.to_pandas().attrs["bounds"]["columns"]["v"]["hi"] == Fraction(b["columns"]["v"]["hi"])
