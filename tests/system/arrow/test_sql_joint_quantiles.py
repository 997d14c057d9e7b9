"""Issue 34 §4: several PERCENTILE_CONT of one column in one DP SQL query are one joint law per group (Arrow
engine): the query equals its ``Session.groups`` call under one seed and the manifest names the joint law."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

SEED = 5
QUERY = """SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, privacy_unit_column = user_id, keys = regions)
  region,
  COUNT(*) AS people,
  PERCENTILE_CONT(age, 0.25, contribution_bounds_per_group => (0, 120)) AS age_q1,
  PERCENTILE_CONT(age, 0.75, contribution_bounds_per_group => (0, 120)) AS age_q3
FROM measurements
GROUP BY region"""


def _tables() -> dict[str, pa.Table]:
    import numpy as np

    rng = np.random.default_rng(3)  # test data, not noise
    n = 3000
    region = rng.choice(["north", "east", "islands"], n)
    return {"measurements": pa.table({"user_id": list(range(n)), "region": region.tolist(),
                                      "age": rng.integers(18, 90, n).astype(float).tolist()}),
            "regions": pa.table({"region": ["north", "east", "islands"]})}


def _session() -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(tables=_tables(), public_tables=["regions"], max_units=100_000, unit_column="user_id",
                           rng=SeededRandom(SEED))


def test_two_percentiles_of_one_column_are_one_joint_law(tmp_path: Path) -> None:
    with _session() as s:
        by_sql = s.sql(QUERY, output=tmp_path / "sql")
    with _session() as s:
        by_api = s.groups(by=["region"], keys=["north", "east", "islands"], epsilon="1", output=tmp_path / "api",
                          aggregates=[{"name": "people", "kind": "count"},
                                      {"name": "age_q1", "kind": "quantile", "column": "age", "q": "0.25",
                                       "lo": "0", "hi": "120"},
                                      {"name": "age_q3", "kind": "quantile", "column": "age", "q": "0.75",
                                       "lo": "0", "hi": "120"}])
    assert by_sql.to_pandas().equals(by_api.to_pandas())
    rows = {r["name"]: r for r in by_sql.section["aggregates"]}
    assert rows["age_q1"]["noise"] == rows["age_q3"]["noise"] == "joint_exponential_mechanism"
    frame = by_sql.to_pandas()
    assert (frame["age_q1"] <= frame["age_q3"]).all() and len(frame) == 3
