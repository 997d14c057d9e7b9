"""DP SQL, ``groups`` filters and public joins on Spark: the same query gives the same release on Spark as on
Arrow (and as its ``Session.groups`` call) under one seed; the WHERE reaches Spark as a Column built from the
parsed tree, the public table as a broadcast DataFrame built from its Arrow data.

Kept short: a small table (2,500 rows; enough units that the private key selection keeps its keys), one
Spark release per query (the SQL on Spark against the SQL and the API call on Arrow: Session.sql runs the
very Session.groups call it compiles to), one session fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.system.arrow.test_sql_session import (EXAMPLES, PRIVATE_KEYS, SEED, data_files, measurements,
                                                 regions_table, zones_table)

pytestmark = pytest.mark.spark

#: the private table: small (the Spark jobs' cost is their number and size, not the check's)
ROWS, USERS = 2500, 800


def small() -> Any:
    return measurements(ROWS, USERS)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import pyarrow.parquet as pq
    from pyarrow import csv

    tmp = tmp_path_factory.mktemp("sql-spark")
    pq.write_table(small(), tmp / "m.parquet")
    csv.write_csv(small(), tmp / "m.csv")
    return {"parquet": tmp / "m.parquet", "csv": tmp / "m.csv"}


def _session(data: Any, spark: Any = None) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(tables={"measurements": data, "regions": regions_table(), "zones": zones_table()},
                           public_tables=["regions", "zones"], max_units=100_000, unit_column="user_id",
                           rng=SeededRandom(SEED), spark=spark)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_sql_on_spark_equals_arrow_and_the_api_call(spark: Any, files: dict[str, Path], tmp_path: Path,
                                                    name: str) -> None:
    query, api = EXAMPLES[name]
    with _session(files["parquet"]) as s:
        on_arrow = s.sql(query, output=tmp_path / "arrow")
    with _session(files["parquet"]) as s:  # the call the query compiles to: the one Session.sql runs on Spark too
        api(s, tmp_path / "api")
    with _session(files["parquet"], spark) as s:
        on_spark = s.sql(query, output=tmp_path / "spark")
        assert s.arrow_source() is None  # with a SparkSession the release runs on Spark
    assert data_files(tmp_path / "spark") == data_files(tmp_path / "arrow") == data_files(tmp_path / "api")
    assert on_spark.to_pandas().equals(on_arrow.to_pandas())


def test_groups_filter_on_csv_text_is_identical_on_both_engines(spark: Any, files: dict[str, Path],
                                                                  tmp_path: Path) -> None:
    """CSV columns are text on both engines: the filter reads numbers from text the same way."""
    with _session(files["csv"]) as s:
        a = s.sql(PRIVATE_KEYS, output=tmp_path / "arrow")
    with _session(files["csv"], spark) as s:
        b = s.sql(PRIVATE_KEYS, output=tmp_path / "spark")
    assert data_files(tmp_path / "arrow") == data_files(tmp_path / "spark")
    assert a.keys() == b.keys() and "south" not in a.keys() and len(a.keys()) == 3


def test_a_spark_dataframe_filter_drops_the_rows_it_should(spark: Any, files: dict[str, Path], tmp_path: Path) -> None:
    """Bounded noise holds with probability 1: the filtered counts are checked against the truth exactly."""
    import dpspark
    from dpspark.rng import SeededRandom

    df = spark.read.parquet(str(files["parquet"]))
    tab = small().to_pandas()
    truth = tab[(tab.age >= 30) & (tab.hours.isna() | (tab.hours < 35))].groupby("region").size().to_dict()
    with dpspark.Session(df, max_units=100_000, rng=SeededRandom(SEED)) as s:
        rel = s.groups(by="region", keys=["north", "south", "east", "west"], noise="bounded", epsilon="1",
                       delta="1e-8", where="age >= 30 AND (hours IS NULL OR hours < 35)",
                       aggregates=[{"name": "n", "kind": "count"}], output=tmp_path / "f")
    for key in rel.keys():
        entry = rel.lookup(key)["n"]
        assert abs(entry.value - truth[key]) <= entry.always


def test_catalog_tables_by_name(spark: Any, files: dict[str, Path], tmp_path: Path) -> None:
    """With a SparkSession, Session(tables=...) takes catalog table names; the release equals the file's."""
    import dpspark
    from dpspark.errors import DPSparkError
    from dpspark.rng import SeededRandom

    spark.read.parquet(str(files["parquet"])).createOrReplaceTempView("sql_measurements_view")
    with dpspark.Session(tables={"measurements": "sql_measurements_view", "regions": regions_table(),
                                 "zones": zones_table()}, public_tables=["regions", "zones"], max_units=100_000,
                         unit_column="user_id", rng=SeededRandom(SEED), spark=spark) as s:
        s.sql(EXAMPLES["public"][0], output=tmp_path / "catalog")
    with _session(files["parquet"]) as s:  # the file on Arrow (= the file on Spark: the first test)
        s.sql(EXAMPLES["public"][0], output=tmp_path / "file")
    assert data_files(tmp_path / "catalog") == data_files(tmp_path / "file")
    with pytest.raises(DPSparkError, match="no_such_table"):
        dpspark.Session(tables={"m": "no_such_table"}, max_units=10, spark=spark)
