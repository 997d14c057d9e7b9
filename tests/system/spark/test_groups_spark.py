"""The Spark groups kernel equals the Arrow kernel (and the reference) for the same secret."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from dpspark.mechanisms.groups.arrow_stats import groups_on
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
