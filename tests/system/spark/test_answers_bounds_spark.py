"""The answers' bounds pre-pass on Spark (mechanisms/answers/bounds_pass.py) equals the Arrow engine's, on the
hostile columns of the answers' engine tests (NULL, NaN, +-inf, text; NULL, -0.0 and NaN units), with and
without a unit column, a unit's rows across partitions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dpspark.mechanisms.answers.bounds_pass import PRE_BOUND, PRE_SCALE_BITS, unit_cells_arrow, unit_cells_spark
from dpspark.mechanisms.answers.queries import QueryKind

pytestmark = pytest.mark.spark


def test_spark_prepass_equals_arrow(spark, tmp_path: Path) -> None:
    from tests.system.spark.test_answers_spark_arrow import _hostile, _scalars

    t = _hostile()
    pq.write_table(t, tmp_path / "h.parquet")
    df = spark.read.parquet(str(tmp_path / "h.parquet")).repartition(3)
    sums = [s for s in _scalars(12) if s.kind is QueryKind.SUM and s.column is not None]
    pre = [replace(s, lo=-PRE_BOUND, hi=PRE_BOUND, scale_bits=PRE_SCALE_BITS) for s in sums][:8]
    assert len(pre) >= 4
    for unit in (None, "us", "ud"):
        a = unit_cells_arrow(t, pre, unit)
        b = unit_cells_spark(df, pre, unit)
        assert a == b, unit
        assert len({sum(h) for h in a}) == 1 and sum(a[0]) > 0  # every unit (row) in one cell of each histogram


def test_auto_bounded_answers_are_identical_on_both_engines(spark, tmp_path: Path) -> None:
    """One seed, one input: the same chosen bounds, statements and answers on Spark and Arrow."""
    import json

    import dpspark
    from dpspark.rng import SeededRandom
    from tests.system.arrow.test_sql_session import data_files
    from tests.unit.answers.test_answers_autobounds import BUDGET, QUERIES, frame

    path = tmp_path / "d.parquet"
    frame(4000).to_parquet(path)

    def release(out: Path, **kw):  # type: ignore[no-untyped-def]
        with dpspark.Session(str(path), unit_column="user", max_units=10_000, budget=BUDGET, rng=SeededRandom(3),
                             **kw) as s:
            return s.release(mechanism="gaussian", sections={"queries": QUERIES}, epsilon="1", delta="1e-9",
                             output=out)

    a = release(tmp_path / "arrow")
    b = release(tmp_path / "spark", spark=spark)
    params = [json.loads((tmp_path / e / "manifest.json").read_text())["mechanism"]["parameters"]
              for e in ("arrow", "spark")]
    assert params[0]["bounds"] == params[1]["bounds"] and params[0]["queries"] == params[1]["queries"]
    assert b.manifest.privacy_text() == a.manifest.privacy_text()
    assert data_files(tmp_path / "spark") == data_files(tmp_path / "arrow")
