"""Issue 32's fuzz on both engines: each of >= 5,000 generated and mutated DP SQL queries (the Arrow fuzz's,
tests/unit/sql/test_sql_fuzz.py) runs on Arrow and on Spark under one seed, and either gives byte-identical
release data files on both, or the same refusal (error class and message) on both, with the budget and the
output folder untouched. No foreign exception, no query over the public time bound (``attempt`` asserts them).

Made fast: one session per engine renewed every SESSION_QUERIES queries (seeded by the query's index, so both
engines draw the same noise), the private tables as Spark DataFrames created once, one shuffle partition, and
one output folder per query, reused by the second engine (so a message that names it is the same on both).
A refusal at compile time starts no Spark job, so its Spark half costs about what its Arrow half does.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.system.arrow.test_sql_session import data_files
from tests.unit.sql.test_sql_fuzz import (PUBLIC, SESSION_QUERIES, attempt, check_counts, fuzz_session, fuzz_tables,
                                          new_counts, queries)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


#: how a schema refusal names the input it checked, on each engine (engine/checks.py, engine/runner.py): the
#: name of the input as that engine holds it, public; compared as one
INPUT_NAMES = ("(the session's table;", "(the input DataFrame;")


def _outcome(s: Any, query: str, out: Path, counts: dict[str, int]) -> Any:
    """The release's data files (the folder then removed), or the refusal ``"Class: message"`` (the input's
    name in a schema refusal made one: :data:`INPUT_NAMES`)."""
    refusal = attempt(s, query, out, counts)
    if refusal is not None:
        for name in INPUT_NAMES:
            refusal = refusal.replace(name, "(the input;")
        return refusal
    files = data_files(out)
    shutil.rmtree(out)
    return files


def run_on_both(spark: Any, tmp_path: Path, seed: int, n: int) -> dict[str, int]:
    """Run the Arrow fuzz's n queries on both engines, asserting identical outcomes; the Arrow counts."""
    tables = fuzz_tables()
    frames = {**{name: spark.createDataFrame(t) for name, t in tables.items() if name not in PUBLIC},
              **{name: tables[name] for name in PUBLIC}}  # public tables stay Arrow (read on the driver)
    counts, spark_counts = new_counts(), new_counts()
    started = time.monotonic()
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")  # a release of <= 240 rows: one task per stage
    try:
        for i, query in enumerate(queries(seed, n)):
            if i % SESSION_QUERIES == 0:
                on_arrow, on_spark = fuzz_session(tables, i), fuzz_session(frames, i, spark)
            out = tmp_path / f"q{i}"
            a = _outcome(on_arrow, query, out, counts)
            b = _outcome(on_spark, query, out, spark_counts)
            assert a == b, f"the engines differ on query {i} {query!r}:\narrow: {a}\nspark: {b}"
            if (i + 1) % 100 == 0:
                print(f"fuzz-engines: {i + 1}/{n} in {time.monotonic() - started:.0f} s: {counts}",  # report
                      flush=True)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    assert spark_counts == counts
    return counts


def test_fuzz_sample_is_identical_on_both_engines(spark: Any, tmp_path: Path) -> None:
    counts = run_on_both(spark, tmp_path, seed=1, n=60)
    assert counts["ran"] >= 5 and counts["refused"] >= 5  # both outcomes are exercised
    assert counts["private"] >= 2 and counts["public"] >= 2 and counts["off-unit"] >= 1 and counts["stddev"] >= 1


def test_fuzz_5000_is_identical_on_both_engines(spark: Any, tmp_path: Path) -> None:
    started = time.monotonic()
    counts = run_on_both(spark, tmp_path, seed=2, n=5000)
    print(f"fuzz-engines: {counts} in {time.monotonic() - started:.0f} s")  # report
    check_counts(counts, 5000)
