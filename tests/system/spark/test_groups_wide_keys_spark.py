"""Private keys over three 31-byte string columns on Spark (issue 34 §5): 96-byte index words, the same release
as the Arrow engine's, keys decoding to the original tuples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.system.arrow.test_groups_wide_keys import KEYS, release, wide_table

pytestmark = pytest.mark.spark


def test_spark_releases_the_wide_tuple_keys_as_arrow_does(spark: Any, tmp_path: Path) -> None:
    pq.write_table(wide_table(), tmp_path / "wide.parquet")
    on_arrow = release(tmp_path / "wide.parquet", tmp_path / "arrow")
    on_spark = release(tmp_path / "wide.parquet", tmp_path / "spark", spark=spark)
    assert on_spark.to_arrow().equals(on_arrow.to_arrow())
    df = on_spark.to_pandas()
    assert sorted(zip(df["a"], df["b"], df["c"])) == sorted(KEYS)
