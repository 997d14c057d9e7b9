"""max_units optional on Spark: groups and answers without it give the same release as on Arrow (one seed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dpspark.privacy import AddRemove
from dpspark.privacy.relations import UNITS_CAP
from tests.system.arrow.test_sql_session import data_files

pytestmark = pytest.mark.spark

REGIONS = ["north", "south", "east", "west"]


def _session(path: Path, spark: Any = None) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(str(path), unit_column="pid", rng=SeededRandom(11), spark=spark)


def test_groups_and_answers_without_max_units_on_spark(spark: Any, tmp_path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    pid = np.repeat(np.arange(5000, dtype=np.int64), 2)  # 5000 people, 2 rows each
    path = tmp_path / "people.parquet"
    pq.write_table(pa.table({"pid": pid, "region": pa.array([REGIONS[i % 4] for i in range(len(pid))]),
                             "hours": pid % 40}), path)
    aggs = [{"name": "n", "kind": "count"}, {"name": "h", "kind": "sum", "column": "hours", "lo": "0", "hi": "40"}]
    out = {}
    for engine, sp in (("arrow", None), ("spark", spark)):
        with _session(path, sp) as s:
            out[engine] = s.groups(by="region", keys=REGIONS, aggregates=aggs, epsilon="1", max_rows_per_group=2,
                                   output=tmp_path / f"g-{engine}")
    a, b = out["arrow"], out["spark"]
    assert b.manifest.add_remove.relation == AddRemove(UNITS_CAP) and b.section == a.section
    assert b.manifest.privacy_text() == a.manifest.privacy_text()
    assert data_files(tmp_path / "g-spark") == data_files(tmp_path / "g-arrow")
    assert "no max_units declared" in b.units_words()
    queries = [{"name": "n", "kind": "count"}, {"name": "h", "kind": "sum", "column": "hours", "lo": "0", "hi": "80"}]
    for engine, sp in (("arrow", None), ("spark", spark)):
        with _session(path, sp) as s:
            out[engine] = s.release(mechanism="gaussian", epsilon="1", delta="1e-8", output=tmp_path / f"a-{engine}",
                                    sections={"queries": queries})
    assert out["spark"].manifest.add_remove.relation == AddRemove(UNITS_CAP)
    assert data_files(tmp_path / "a-spark") == data_files(tmp_path / "a-arrow")
