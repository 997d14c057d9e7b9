"""Issue 34 §4: quartiles of one column in one ``groups`` release go through ONE joint law per group, and the
release is identical on Spark and on Arrow for one seed (integer delays: atoms at every quantile)."""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

SEED = 23
Q = [("q1", "1/4"), ("med", "1/2"), ("q3", "3/4")]
AGGS = [{"name": "flights", "kind": "count"},
        *({"name": n, "kind": "quantile", "column": "delay", "q": q, "lo": "-30", "hi": "90", "bins": 24}
          for n, q in Q)]
KEYS = ["AA", "B6", "UA"]


def _table(n: int = 6000) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(9)  # test data, not noise
    carrier = rng.choice(KEYS + ["ZZ"], n).astype(object)
    delay = np.rint(rng.gamma(2, 8, n) - 10).astype(object)  # whole minutes: many rows per grid cell
    delay[rng.random(n) < 0.03] = None
    return pa.table({"carrier": pa.array(carrier.tolist(), pa.string()),
                     "user": pa.array(list(range(n)), pa.int64()),  # one row per unit: nothing truncated
                     "delay": pa.array(delay.tolist(), pa.float64())})


def _release(data: Any, out: Path, spark: Any = None) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(data, max_units=10_000, unit_column="user", spark=spark, rng=SeededRandom(SEED)) as s:
        return s.groups(by="carrier", keys=KEYS, aggregates=AGGS, epsilon="2", output=out)


def _files(rel: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rel.iterdir())
            if p.is_file() and "manifest" not in p.name}


def test_joint_quartiles_are_identical_on_both_engines_and_within_their_bar(spark: Any, tmp_path: Path) -> None:
    tab = _table()
    pq.write_table(tab, tmp_path / "flights.parquet")
    on_arrow = _release(tmp_path / "flights.parquet", tmp_path / "arrow")
    on_spark = _release(tmp_path / "flights.parquet", tmp_path / "spark", spark)
    assert on_spark.to_arrow().equals(on_arrow.to_arrow())
    assert _files(tmp_path / "spark") == _files(tmp_path / "arrow")
    rows = {r["name"]: r for r in on_arrow.section["aggregates"]}
    assert all(rows[n]["noise"] == "joint_exponential_mechanism" for n, _ in Q)
    frame = on_arrow.to_pandas().set_index("carrier")
    for key in KEYS:  # each released quartile's cell holds its rank within the stated bar (seeded, w.p. >= 0.95)
        pairs = zip(tab.column("carrier").to_pylist(), tab.column("delay").to_pylist())
        vals = sorted(min(max(d, -30), 90) for c, d in pairs if c == key and d is not None)
        n = len(vals)
        got = [frame.loc[key, name] for name, _ in Q]
        assert got == sorted(got)
        for (name, q), v in zip(Q, got):
            bar = frame.loc[key, f"{name}_rank_error"]
            below = sum(1 for d in vals if d < v - 2.5)  # report: cells are 5 minutes wide, centred on the point
            above = sum(1 for d in vals if d >= v + 2.5)  # report
            share = Fraction(q)
            assert below <= share * n + Fraction(bar) and above <= (1 - share) * n + Fraction(bar)
