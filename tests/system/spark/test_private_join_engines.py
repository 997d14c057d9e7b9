"""Private joins on the unit on Spark: the per-unit truncation (here biting: 2 and 1 rows per unit), the join and
the groups statistics are identical to Arrow's under one seed, from Session.groups and from SQL; and a public
join whose table repeats its keys (m = 2) too.

Kept short: small tables (800 orders of 200 units), three Spark releases in two sessions (Arrow tables on Spark:
the private join and the duplicate-key join; Spark DataFrames: the SQL), the rest on Arrow."""

from __future__ import annotations

import hashlib
import random
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
    n = 800
    amount = rng.gamma(2.0, 20.0, n).round(1)
    amount[::17] = np.nan
    amount[::23] = -0.0
    channel = rng.choice(["web", "app", "phone"], n).astype(object)
    channel[::13] = None
    return pa.table({UNIT: rng.integers(0, 200, n), "amount": pa.array(amount, from_pandas=True),
                     "channel": pa.array(channel, pa.string())})


def data_files(rel: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rel.iterdir())
            if p.is_file() and "manifest" not in p.name}


def _session(tables: dict[str, Any], spark: Any = None) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(tables=tables, max_units=100_000, unit_column=UNIT, rng=SeededRandom(SEED), spark=spark)


def _groups(s: Any, out: Path, rows_per_unit: tuple[int, int] = (2, 1)) -> Any:
    return s.groups(by=["region"], keys=["north", "south", "east"], epsilon="1", noise="pure", max_rows_per_group=4,
                    max_groups_per_unit=2, output=out,
                    join={"table": "users", "on": UNIT, "private": True, "max_rows_per_unit": list(rows_per_unit)},
                    aggregates=[{"name": "n", "kind": "count"},
                                {"name": "amount", "kind": "sum", "column": "amount", "lo": "0", "hi": "100"},
                                {"name": "mean_age", "kind": "mean", "column": "age", "lo": "0", "hi": "100"}])


#: a public table with duplicate keys (web twice): bounded after the join
SEGMENTS = pa.table({"channel": ["web", "web", "app", "phone"], "segment": ["a", "b", "a", "c"]})


def _dup(s: Any, out: Path) -> Any:
    return s.groups(by=["segment"], keys=["a", "b", "c"], epsilon="1", max_rows_per_group=2, output=out,
                    join={"table": SEGMENTS, "on": ["channel"]}, aggregates=[{"name": "n", "kind": "count"}])


def test_private_join_is_identical_on_spark_and_arrow(spark: Any, tmp_path: Path) -> None:
    tables = {"orders": orders(), "users": users_table(250)}
    with _session(tables) as s:  # Arrow: the private join (truncation biting: 2 and 1 rows), then the public one
        on_arrow = _groups(s, tmp_path / "arrow")
        rel = _dup(s, tmp_path / "dup-arrow")
    with _session(tables, spark) as s:  # the same two releases on Spark, in the same order (one seeded rng)
        _groups(s, tmp_path / "spark")
        assert s.arrow_source() is None
        _dup(s, tmp_path / "dup-spark")
    assert data_files(tmp_path / "arrow") == data_files(tmp_path / "spark")
    assert data_files(tmp_path / "dup-arrow") == data_files(tmp_path / "dup-spark")
    assert sorted(on_arrow.keys()) == ["east", "north", "south"]
    assert rel.manifest.parameters["join"]["multiplicity"] == 2
    with _session(tables) as s:  # the truncation bites: without it the statistics (and files) differ
        _groups(s, tmp_path / "wide", (1000, 1000))
    assert data_files(tmp_path / "wide") != data_files(tmp_path / "arrow")
    # SQL over Spark DataFrames (both private tables), against SQL on Arrow
    frames = {name: spark.createDataFrame(table) for name, table in tables.items()}
    with _session(frames) as s:
        s.sql(JOINED.format(how="LEFT "), output=tmp_path / "sql-spark")
    with _session(tables) as s:
        s.sql(JOINED.format(how="LEFT "), output=tmp_path / "sql-arrow")
    assert data_files(tmp_path / "sql-spark") == data_files(tmp_path / "sql-arrow")


@pytest.mark.slow
def test_fuzz_join_queries_are_identical_on_both_engines(spark: Any, tmp_path: Path) -> None:
    """Generated queries of the supported subset with a join (public, unique or duplicate keys; private on the
    unit, inner or left; or private off the unit): each gives the same release files on Spark as on Arrow under
    one seed, or the same refusal (a join off the unit: always a SqlError, before the spend)."""
    import dpspark
    from dpspark.errors import DPSparkError
    from dpspark.rng import SeededRandom
    from tests.unit.sql.test_sql_fuzz import PRIVATE_OFF_UNIT, PUBLIC, fuzz_tables, generated

    rng = random.Random(11)
    tables = fuzz_tables()

    def outcome(query: str, i: int, engine: Any) -> Any:
        out = tmp_path / f"q{i}-{'spark' if engine else 'arrow'}"
        s = dpspark.Session(tables=tables, public_tables=PUBLIC, max_units=1000, unit_column="user_id",
                            rng=SeededRandom(i), spark=engine)
        try:
            s.sql(query, output=out)
        except DPSparkError as err:
            return f"{type(err).__name__}: {err}"
        return data_files(out)

    ran: list[str] = []
    refused: list[str] = []
    for i in range(400):  # the first 8 that run on Arrow, and 3 refused there (each compared on Spark)
        query = generated(rng, clean=True)
        if " JOIN " not in query or " GROUP BY " not in query:
            continue
        on_arrow = outcome(query, i, None)
        kept = ran if isinstance(on_arrow, dict) else refused
        if len(kept) >= (8 if kept is ran else 3):
            continue
        assert outcome(query, i, spark) == on_arrow, query
        assert not any(j in query for j in PRIVATE_OFF_UNIT) or str(on_arrow).startswith("SqlError"), query
        kept.append(query)
        if len(ran) == 8 and len(refused) == 3:
            break
    assert len(ran) == 8 and len(refused) == 3
    assert any(" JOIN u " in q for q in ran) and any("dupdims" in q for q in ran)


def test_private_join_without_group_by_is_identical_on_spark_and_arrow(spark: Any, tmp_path: Path) -> None:
    """A private join without GROUP BY (one public group, its constant key added after the join: F.lit on Spark)
    and SUM/AVG with bounds chosen privately: SQL over Spark DataFrames gives the files of Session.groups(by=[])
    on Arrow under one seed (on main the query is refused)."""
    from tests.unit.sql.test_join_global import AGGS, WHERE, query

    tables = {"orders": orders(), "users": users_table(250)}
    frames = {name: spark.createDataFrame(table) for name, table in tables.items()}
    with _session(frames) as s:
        assert s.arrow_source() is None
        rel = s.sql(query(WHERE, "epsilon = 1, delta = 1e-9, privacy_unit_column = customer_id, "
                                 "max_rows_per_group = 2"), output=tmp_path / "spark")
    with _session(tables) as s:
        s.groups(by=[], keys=[[]], epsilon="1", delta="1e-9", max_rows_per_group=2, where=WHERE[len(" WHERE "):],
                 output=tmp_path / "arrow", aggregates=AGGS, join={"table": "users", "on": UNIT, "private": True})
    assert data_files(tmp_path / "spark") == data_files(tmp_path / "arrow")
    assert rel.is_global and len(rel.to_pandas()) == 1
