"""Bounds chosen privately in the answers family (mechanisms/answers/autobounds.py), on the Arrow engine: the
spec side (parse, refusals before the spend, one charge), the statement's re-derivation, the stated bounds and
their clipped-units bound against the truth, and SQL == Session.release under one seed."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpspark
from dpspark.mechanisms.answers.queries import QueryError, parse_query
from dpspark.rng import SeededRandom

SEED = 7
BUDGET = {"epsilon": "3", "delta": "1e-8"}


def frame(n: int = 20_000) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    return pd.DataFrame({"user": rng.integers(0, n // 4, n), "v": rng.integers(0, 100, n).astype(float),
                         "d": rng.normal(10, 30, n).round(1), "k": rng.choice(["a", "b"], n)})


QUERIES = [{"name": "s", "kind": "sum", "column": "v"}, {"name": "m", "kind": "mean", "column": "d"},
           {"name": "c", "kind": "count"}, {"name": "fixed", "kind": "sum", "column": "v", "lo": 0, "hi": 10}]


def _params(rel: Path) -> dict[str, Any]:
    return json.loads((rel / "manifest.json").read_text())["mechanism"]["parameters"]


def test_parse_auto_and_its_refusals() -> None:
    q = parse_query({"name": "s", "kind": "sum", "column": "x"}, 0)
    assert q.auto and q.describe()["lo"] == "chosen privately"
    assert not parse_query({"name": "s", "kind": "sum", "column": "x", "lo": 0, "hi": 1}, 0).auto
    with pytest.raises(QueryError, match="give both, or neither"):
        parse_query({"name": "s", "kind": "sum", "column": "x", "hi": 1}, 0)
    with pytest.raises(QueryError, match="scale_bits is chosen with the bounds"):
        parse_query({"name": "s", "kind": "mean", "column": "x", "scale_bits": 4}, 0)


@pytest.mark.parametrize("extra, words", [({"bounds_share": "1/5"}, "bounds_share applies only"),
                                          ({"bounds_share": 0.2}, "float")])
def test_refusals_before_the_spend(tmp_path: Path, extra: dict[str, Any], words: str) -> None:
    qs = QUERIES[2:] if "1/5" in str(extra.get("bounds_share")) else QUERIES
    with dpspark.Session(frame(200), unit_column="user", max_units=1000, budget=BUDGET) as s:
        with pytest.raises(Exception, match=words):
            s.release(mechanism="bounded_noise", sections={"queries": qs}, epsilon="1", delta="1e-9",
                      output=tmp_path / "r", **extra)
        assert not s.remaining.epsilon.le(Fraction(29, 10))  # nothing spent


@pytest.mark.parametrize("mechanism", ["bounded_noise", "gaussian"])
def test_release_states_bounds_and_a_clipped_bound_covering_the_truth(tmp_path: Path, mechanism: str) -> None:
    df = frame()
    with dpspark.Session(df, unit_column="user", max_units=100_000, budget=BUDGET, rng=SeededRandom(SEED)) as s:
        explain = s.release(mechanism=mechanism, sections={"queries": QUERIES}, epsilon="1", delta="1e-9",
                            explain=True)
        rel = s.release(mechanism=mechanism, sections={"queries": QUERIES}, epsilon="1", delta="1e-9",
                        output=tmp_path / "r")  # opened: the statements re-derive with the bounds step
        assert s.remaining.epsilon.le(Fraction(2)) and not s.remaining.epsilon.le(Fraction(19, 10))
    assert "bounds: chosen privately for s, m on 1/10 of epsilon" in explain
    p = _params(tmp_path / "r")
    b = p["bounds"]
    assert b["share"] == "1/10" and set(b["queries"]) == {"s", "m"} and b["law"]["sensitivity"] == 1
    totals = {"s": df.groupby("user")["v"].sum(), "m": df.groupby("user")["d"].sum()}
    listed = {q["name"]: q for q in p["queries"]}
    for name in ("s", "m"):
        row = b["queries"][name]
        lo, hi = Fraction(row["lo"]), Fraction(row["hi"])
        assert (listed[name]["lo"], listed[name]["hi"]) == (row["lo"], row["hi"])  # the queries ran with them
        t = totals[name]
        assert row["units_clipped_at_most"] >= int(((t < float(lo)) | (t > float(hi))).sum())
    s_hi = Fraction(b["queries"]["s"]["hi"])
    assert 0 <= Fraction(b["queries"]["s"]["lo"]) and totals["s"].quantile(0.9) <= s_hi <= 2 * totals["s"].max()
    assert listed["fixed"]["hi"] == "10" and listed["fixed"]["scale_bits"] == 8  # given bounds untouched
    attrs = rel.to_pandas().attrs["bounds"]  # the same choices, exact, beside the table and in inspect's words
    assert attrs["share"] == Fraction(1, 10) and set(attrs["queries"]) == {"s", "m"}
    assert attrs["queries"]["s"]["hi"] == s_hi and attrs["queries"]["s"]["scale_bits"] == listed["s"]["scale_bits"]
    words = dict(rel.describe_lines())
    assert words["bounds of s"].startswith(f"chosen privately: [{attrs['queries']['s']['lo']}, {s_hi}]")


def test_sql_equals_session_release_under_one_seed(tmp_path: Path) -> None:
    df = frame(5000)
    q = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9) SUM(v) AS s, AVG(d) AS m "
         "FROM data WHERE k = 'a'")
    with dpspark.Session(tables={"data": df}, unit_column="user", max_units=10_000, budget=BUDGET,
                         rng=SeededRandom(SEED)) as s:
        a = s.sql(q, output=tmp_path / "sql")
    qs = [{"name": "s", "kind": "sum", "column": "v", "filter": "(k = 'a')"},
          {"name": "m", "kind": "mean", "column": "d", "mean": "noisy_count", "filter": "(k = 'a')"}]
    with dpspark.Session(df, unit_column="user", max_units=10_000, budget=BUDGET, rng=SeededRandom(SEED)) as s:
        b = s.release(mechanism="bounded_noise", sections={"queries": qs}, epsilon="1", delta="1e-9",
                      output=tmp_path / "api")
    pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas())
    assert _params(tmp_path / "sql")["bounds"]["queries"] == _params(tmp_path / "api")["bounds"]["queries"]


def test_toml_equals_session_release_under_one_seed(tmp_path: Path) -> None:
    from dpspark.api.config import load_config
    from dpspark.engine.runner import run_release
    from dpspark.lookup import open_release

    df = frame(5000)
    df.to_parquet(tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text(
        '[input]\npath = "in.parquet"\n[privacy]\nmechanism = "bounded_noise"\nepsilon = "1"\ndelta = "1e-9"\n'
        'max_units = 10000\nunit_column = "user"\nbounds_share = "1/5"\n'
        '[[queries]]\nname = "s"\nkind = "sum"\ncolumn = "v"\n'
        '[[queries]]\nname = "m"\nkind = "mean"\ncolumn = "d"\nfilter = "k = \'a\'"\n'
        '[output]\npath = "release"\n')
    toml = open_release(run_release(load_config(tmp_path / "c.toml"), rng=SeededRandom(SEED),
                                    progress=lambda _m: None))
    qs = [{"name": "s", "kind": "sum", "column": "v"},
          {"name": "m", "kind": "mean", "column": "d", "filter": "k = 'a'"}]
    with dpspark.Session(df, unit_column="user", max_units=10_000, budget=BUDGET, rng=SeededRandom(SEED)) as s:
        api = s.release(mechanism="bounded_noise", sections={"queries": qs}, epsilon="1", delta="1e-9",
                        bounds_share="1/5", output=tmp_path / "api")
    pd.testing.assert_frame_equal(toml.to_pandas(), api.to_pandas())
    assert toml.parameters["bounds"] == api.parameters["bounds"] and api.parameters["bounds"]["share"] == "1/5"
