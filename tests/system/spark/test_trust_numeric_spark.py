"""Issue 31 ("Trust, turn 4") sections 2 and 4 on the Spark engine (the one ``spark`` session fixture).

§2: the 2^63 edge for each groups aggregate kind (Spark's statistics equal Arrow's and release), and the
mechanisms with Spark kernels of their own at their public bounds with max_units units.
§4: D and D' differing in one row (a value past DBL_MAX / 2^b, a NULL, one unit past max_units) give the
same driver warnings and outcome on Spark; the worker's stderr is compared in a fresh JVM by
tests/system/spark/test_trust_stderr_spark.py.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from pathlib import Path
from typing import Any

import pytest

from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.spark_stats import groups_spark
from tests.support.golden import CASES
from tests.system.arrow.test_trust_numeric_arrow import (
    KINDS, SECRET, bound_table, edge_stage, edge_table, neighbours, release_edge, run_table)

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("rows,max_units", [(2, 2), (4, 3)])
def test_groups_2_63_edge_on_spark(spark: Any, rows: int, max_units: int) -> None:
    """Every kind at and past 2^63 (and, at 4 rows over max_units 3, through the unit cut): Spark's
    statistics are Arrow's, and each kind releases (main: sum, mean, variance failed from 2 rows)."""
    table = edge_table(rows)
    df = spark.createDataFrame(table.to_pandas())
    for kind in KINDS:
        stage = dataclasses.replace(edge_stage(kind, rows), max_units=max_units)
        on_spark = groups_spark(df, stage, SECRET)
        assert list(on_spark) == list(groups_on(table, stage, SECRET))
        assert list(on_spark)[0].stats["n"] == (min(rows, max_units),)
        assert release_edge(on_spark, kind, max_units).keys == [0, 1]


SPARK_CASES = ["groups", "bounded_noise", "bounded_noise+filters", "gaussian"]


@pytest.mark.parametrize("case_id", SPARK_CASES)
def test_spark_kernels_at_their_public_bounds_with_max_units_units(spark: Any, tmp_path: Path, case_id: str) -> None:
    """groups and answers (their own Spark kernels; the filter variant runs only on Spark) release on max_units
    units at +-DBL_MAX-scale values (every clip bound reached), and groups/answers agree with Arrow."""
    case = CASES[case_id]
    for value in (1e308, -1e308):
        table = bound_table(case, value)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = run_table(case, table, tmp_path / f"spark{value}", engine="spark", spark=spark)
        assert (out / "manifest.json").exists()
        assert [str(w.message) for w in caught] == []
        if "+" not in case_id:  # the same release on Arrow, file for file
            arrow = run_table(case, table, tmp_path / f"arrow{value}")
            for f in sorted(p.name for p in arrow.iterdir() if p.is_file() and "manifest" not in p.name):
                assert (out / f).read_bytes() == (arrow / f).read_bytes(), f


@pytest.mark.parametrize("case_id", ["groups", "bounded_noise"])
def test_neighbours_give_the_same_warnings_and_outcome_on_spark(spark: Any, tmp_path: Path, case_id: str) -> None:
    """The driver's view of D and its neighbours on Spark: no warning, the same outcome (scale_bits 16)."""
    case = CASES[case_id]
    config = copy.deepcopy(case.config)
    for q in config.get("aggregates", []) + config.get("queries", []):
        if "column" in q:
            q["scale_bits"] = 16
    seen = {}
    for name, table in neighbours(case).items():
        outcome = "ok"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run_table(case, table, tmp_path / name, engine="spark", spark=spark, config=config)
            except Exception as err:  # noqa: BLE001 - the type is what is compared
                outcome = type(err).__name__
        seen[name] = ([str(w.message) for w in caught], outcome)
    assert seen["D"] == ([], "ok")
    assert all(v == seen["D"] for v in seen.values()), seen
