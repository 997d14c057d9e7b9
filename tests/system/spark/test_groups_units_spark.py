"""The noisy unit count and the "auto" limits on Spark: the same statements, section and table as on Arrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.system.arrow.test_groups_units import COUNT, DECLARED, REGIONS, SEED, people
from tests.system.arrow.test_sql_session import data_files

pytestmark = pytest.mark.spark


def _release(path: Path, out: Path, spark: Any = None, **kw: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(str(path), unit_column="pid", max_units=kw.pop("max_units", DECLARED),
                         rng=SeededRandom(SEED), spark=spark) as s:
        return s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=out, **kw)


def test_the_new_users_case_states_the_same_on_spark(spark: Any, tmp_path: Path) -> None:
    """61,697 people, 50,000 declared: Spark's release states the same noisy unit count, words and statements."""
    import pyarrow.parquet as pq

    path = tmp_path / "survey.parquet"
    pq.write_table(people(), path)
    a = _release(path, tmp_path / "arrow")
    b = _release(path, tmp_path / "spark", spark)
    assert b.section == a.section and "were dropped" in b.units_words()
    assert b.manifest.privacy_text() == a.manifest.privacy_text()
    assert data_files(tmp_path / "spark") == data_files(tmp_path / "arrow")


def test_auto_limits_and_the_profile_agree_on_both_engines(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpspark.engine.backend import open_backend
    from dpspark.mechanisms.groups.unit_profile import UnitProfileStage
    from dpspark.rng import SeededRandom
    from tests.unit.groups.test_unit_profile import stage_of

    t = people(3000, groups=3, rows=5)
    t = t.set_column(1, "region", pa.array([None if i % 97 == 0 else v for i, v in
                                            enumerate(t.column("region").to_pylist())]))  # NULL keys are dropped
    path = tmp_path / "people.parquet"
    pq.write_table(t, path)
    st = UnitProfileStage(stage_of())
    with open_backend("spark", rng=SeededRandom(1), data=spark.read.parquet(str(path))) as sb:
        on_spark = sb.compute(st)
    with open_backend("arrow", rng=SeededRandom(1), source=str(path)) as ab:
        assert ab.compute(st) == on_spark
    a = _release(path, tmp_path / "arrow", max_units=10_000, max_groups_per_unit="auto", max_rows_per_group="auto")
    b = _release(path, tmp_path / "spark", spark, max_units=10_000, max_groups_per_unit="auto",
                 max_rows_per_group="auto")
    assert b.section == a.section and a.section["limits"]["max_groups_per_unit"] == 4
    assert data_files(tmp_path / "spark") == data_files(tmp_path / "arrow")


def test_the_spark_pass_counts_the_units_read_as_arrow(spark: Any, tmp_path: Path) -> None:
    """Spark's pass (per-partition READ rows, summed) reads the same units as Arrow's and as the pre-pass: NULL
    units and keys dropped, a filter, truncated (max_units below the units) or not, with and without a unit."""
    from dataclasses import replace

    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpspark.engine.backend import open_backend
    from dpspark.engine.predicate import parse_predicate
    from dpspark.mechanisms.groups.unit_profile import UnitProfileStage
    from dpspark.rng import SeededRandom
    from tests.unit.groups.test_unit_profile import stage_of

    t = people(2000, groups=3, rows=2)
    t = t.set_column(0, "pid", pa.array([None if i % 41 == 0 else v for i, v in enumerate(t.column("pid").to_pylist())]))
    t = t.set_column(1, "region", pa.array([None if i % 97 == 0 else v for i, v in
                                            enumerate(t.column("region").to_pylist())]))
    path = tmp_path / "people.parquet"
    pq.write_table(t, path)
    for unit in ("pid", None):
        for n in (700, 100_000):
            st = replace(stage_of(unit, filter=parse_predicate("age < 60")), max_units=n)
            with open_backend("spark", rng=SeededRandom(1), data=spark.read.parquet(str(path))) as sb:
                on_spark = sb.compute(st)
            with open_backend("arrow", rng=SeededRandom(1), source=str(path)) as ab:
                on_arrow = ab.compute(st)
                units = ab.compute(UnitProfileStage(st)).units
            assert on_spark == on_arrow and on_spark.units_read == on_arrow.units_read == units > 0
