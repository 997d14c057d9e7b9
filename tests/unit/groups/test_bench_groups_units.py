"""scripts/bench/groups.py's multi-row-unit helpers (issue 34): the k-bounding's dropped rows, the keys ratio."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[3]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_groups", ROOT / "scripts" / "bench" / "groups.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_bounding_loss_counts_the_rows_of_keys_beyond_k(tmp_path: Path) -> None:
    """Unit 0 holds 5 keys (one row each), unit 1 holds 3 keys (2 rows on one), unit 2 one key: at k = 4 any
    bounding drops exactly one row of 10 (unit 0's fifth key); at k = 5 none; at k = 1 at least 4 + 2 rows."""
    units = [0, 0, 0, 0, 0, 1, 1, 1, 1, 2]
    keys = [1, 2, 3, 4, 5, 1, 2, 3, 3, 9]
    path = tmp_path / "u.parquet"
    pq.write_table(pa.table({"unit": units, "key": keys, "value": [0] * 10}), path)
    bench = _bench()
    assert bench.bounding_loss(path, 4) == 1 / 10  # report
    assert bench.bounding_loss(path, 5) == 0
    assert bench.bounding_loss(path, 1) == 6 / 10  # report


def test_table_gives_keys_over_pipelinedps() -> None:
    bench = _bench()
    score = {"count": {"median_abs_error": 1.0, "max_abs_error": 2.0, "missing": 0},  # report
             "sum": {"median_abs_error": 1.0, "max_abs_error": 2.0, "missing": 0},  # report
             "released_keys_median": 15, "true_keys_released_median": 15, "trials": 1, "seconds_median": 1.0}  # report
    recs = [{"system": "dpspark", "status": "ok", "score": score, "wall": 1.0, "load_before": 1, "load_after": 1},  # report
            {"system": "pipelinedp", "status": "ok", "wall": 1.0, "load_before": 1, "load_after": 1,  # report
             "score": {**score, "released_keys_median": 10, "true_keys_released_median": 10}}]
    rows = bench.table("units", recs).splitlines()
    assert "| 1.50 |" in rows[2] and "| 1.00 |" in rows[3]
