"""``pure_groups`` on Spark (docs/groups.md §H): the same statistics as the Arrow engine, so one seed gives the same
release table on both engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.system.arrow.test_pure_groups import HEAVY, frame, release

pytestmark = pytest.mark.spark


def test_spark_gives_the_arrow_release(spark: Any, tmp_path: Path) -> None:
    frame().to_parquet(tmp_path / "d.parquet")
    on_arrow = release(tmp_path / "d.parquet", tmp_path / "arrow")
    on_spark = release(tmp_path / "d.parquet", tmp_path / "spark", spark=spark)
    assert on_spark.kind == "pure_groups"
    assert on_spark.to_arrow().equals(on_arrow.to_arrow())
    assert set(HEAVY) <= set(on_spark.keys())
