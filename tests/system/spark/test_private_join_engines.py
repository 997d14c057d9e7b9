"""Private joins on the unit on Spark: the per-unit truncation (here biting: 2 and 1 rows per unit), the join and
the groups statistics are identical to Arrow's under one seed, from Session.groups and from SQL; and a public
join whose table repeats its keys (m = 2) too."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.unit.sql.test_joins_private import JOINED, SEED, UNIT, users_table

pytestmark = pytest.mark.spark


def orders() -> pa.Table:
    """Orders with NULL, -0.0 and repeated values (the truncation order reads them alike on both engines)."""
    import numpy as np

    rng = np.random.default_rng(8)
    n = 3000
    amount = rng.gamma(2.0, 20.0, n).round(1)
    amount[::17] = np.nan
    amount[::23] = -0.0
    channel = rng.choice(["web", "app", "phone"], n).astype(object)
    channel[::13] = None
    return pa.table({UNIT: rng.integers(0, 700, n), "amount": pa.array(amount, from_pandas=True),
                     "channel": pa.array(channel, pa.string())})


def data_files(rel: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rel.iterdir())
            if p.is_file() and "manifest" not in p.name}


def _session(tables: dict[str, Any], spark: Any = None) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(tables=tables, max_units=100_000, unit_column=UNIT, rng=SeededRandom(SEED), spark=spark)


def _groups(s: Any, out: Path) -> Any:
    return s.groups(by=["region"], keys=["north", "south", "east"], epsilon="1", noise="pure", max_rows_per_group=4,
                    max_groups_per_unit=2, output=out,
                    join={"table": "users", "on": UNIT, "private": True, "max_rows_per_unit": [2, 1]},
                    aggregates=[{"name": "n", "kind": "count"},
                                {"name": "amount", "kind": "sum", "column": "amount", "lo": "0", "hi": "100"},
                                {"name": "mean_age", "kind": "mean", "column": "age", "lo": "0", "hi": "100"}])


def test_private_join_is_identical_on_spark_and_arrow(spark: Any, tmp_path: Path) -> None:
    tables = {"orders": orders(), "users": users_table()}
    with _session(tables) as s:
        on_arrow = _groups(s, tmp_path / "arrow")
    with _session(tables, spark) as s:
        _groups(s, tmp_path / "spark")
        assert s.arrow_source() is None
    assert data_files(tmp_path / "arrow") == data_files(tmp_path / "spark")
    with _session(tables) as s:  # the truncation bites: without it the statistics (and files) differ
        s.groups(by=["region"], keys=["north", "south", "east"], epsilon="1", noise="pure", max_rows_per_group=4,
                 max_groups_per_unit=2, output=tmp_path / "wide",
                 join={"table": "users", "on": UNIT, "private": True, "max_rows_per_unit": [1000, 1000]},
                 aggregates=[{"name": "n", "kind": "count"},
                             {"name": "amount", "kind": "sum", "column": "amount", "lo": "0", "hi": "100"},
                             {"name": "mean_age", "kind": "mean", "column": "age", "lo": "0", "hi": "100"}])
    assert data_files(tmp_path / "wide") != data_files(tmp_path / "arrow")
    assert sorted(on_arrow.keys()) == ["east", "north", "south"]
    # SQL over Spark DataFrames (both private tables), against SQL on Arrow
    frames = {"orders": spark.createDataFrame(orders()), "users": spark.createDataFrame(users_table())}
    with _session(frames) as s:
        s.sql(JOINED.format(how="LEFT "), output=tmp_path / "sql-spark")
    with _session(tables) as s:
        s.sql(JOINED.format(how="LEFT "), output=tmp_path / "sql-arrow")
    assert data_files(tmp_path / "sql-spark") == data_files(tmp_path / "sql-arrow")
    # a public table with duplicate keys (web twice): bounded after the join, identical on both engines
    segments = pa.table({"channel": ["web", "web", "app", "phone"], "segment": ["a", "b", "a", "c"]})

    def dup(s: Any, out: Path) -> Any:
        return s.groups(by=["segment"], keys=["a", "b", "c"], epsilon="1", max_rows_per_group=2, output=out,
                        join={"table": segments, "on": ["channel"]}, aggregates=[{"name": "n", "kind": "count"}])

    with _session(tables) as s:
        rel = dup(s, tmp_path / "dup-arrow")
    with _session(tables, spark) as s:
        dup(s, tmp_path / "dup-spark")
    assert data_files(tmp_path / "dup-arrow") == data_files(tmp_path / "dup-spark")
    assert rel.manifest.parameters["join"]["multiplicity"] == 2
