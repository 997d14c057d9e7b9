"""The Python Session: DataFrame/pandas/Arrow/path inputs, exact budget composition, refusals before any data."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpspark
from dpspark.rng import SeededRandom
from dpspark.api.session import SessionBudgetExceeded

pytestmark = pytest.mark.spark

UNIVERSE = {"kind": "categorical", "values": ["Lima", "Oslo", "Rome"]}


def frame() -> pd.DataFrame:
    users = list(range(300))
    cities = ["Oslo" if u % 3 else ("Lima" if u % 2 else "Rome") for u in users]
    return pd.DataFrame({"user_id": users, "city": cities})


def truth() -> dict[str, int]:
    return frame()["city"].value_counts().to_dict()


def test_pandas_input_two_releases_compose_exactly(spark, tmp_path: Path) -> None:
    with dpspark.Session(frame(), max_units=1000, unit_column="user_id", budget={"epsilon": "2", "delta": "1e-6"},
                         rng=SeededRandom(b"s1")) as s:
        assert s.arrow_source() is not None  # pandas runs on the Arrow engine: no JVM needed
        h = s.histogram(keys="city", universe=UNIVERSE, mechanism="dense", epsilon="1/2", beta="1/1000000000",
                        output=str(tmp_path / "a"))
        df = h.to_pandas()
        assert list(df.columns[:2]) == ["city", "noisy_count"]
        bar = int(df["error_bar"].iloc[0])
        for city, count in truth().items():
            assert abs(int(df.loc[df["city"] == city, "noisy_count"].item()) - count) <= bar  # false alarm <= 1e-9
        s.histogram(keys=["city"], universe=UNIVERSE, mechanism="stability", epsilon="1", delta="1e-7",
                    output=str(tmp_path / "b"))
        left = s.remaining
        assert left.epsilon.as_fraction() == Fraction(1, 2) and left.delta == Fraction(1, 10**6) - Fraction(1, 10**7)
        with pytest.raises(SessionBudgetExceeded, match="exceeds the session budget"):
            s.histogram(keys="city", universe=UNIVERSE, mechanism="dense", epsilon="1", output=str(tmp_path / "c"))
        assert not (tmp_path / "c").exists()  # refused before any data was read
        assert s.remaining == left  # nothing spent by the refusal
    assert not spark.sparkContext._jsc.sc().isStopped()  # a reused session is left running


def test_a_spark_dataframe_reuses_its_session(spark, tmp_path: Path) -> None:
    with dpspark.Session(spark.createDataFrame(frame()), max_units=1000, unit_column="user_id",
                         rng=SeededRandom(b"sp")) as s:
        assert s.arrow_source() is None and s.frame().sparkSession is spark
        s.histogram(keys="city", universe=UNIVERSE, mechanism="dense", epsilon="1", output=str(tmp_path / "r"))
    assert not spark.sparkContext._jsc.sc().isStopped()


def test_arrow_path_and_spark_inputs_give_the_same_release(spark, tmp_path: Path) -> None:
    table = pa.Table.from_pandas(frame(), preserve_index=False)
    pq.write_table(table, tmp_path / "in.parquet")
    outs = []
    for i, data in enumerate((table, str(tmp_path / "in.parquet"), spark.createDataFrame(table))):
        with dpspark.Session(data, max_units=1000, unit_column="user_id", rng=SeededRandom(b"same")) as s:
            rel = s.histogram(keys="city", universe=UNIVERSE, mechanism="dense", epsilon="1", output=str(tmp_path / f"o{i}"))
            outs.append(rel.to_pandas()[["city", "noisy_count"]].to_dict("list"))
    assert outs[0] == outs[1] == outs[2]


def test_spec_errors_surface_before_any_data(tmp_path: Path) -> None:
    s = dpspark.Session(tmp_path / "missing.parquet", max_units=10, budget={"epsilon": "1"})
    with pytest.raises(dpspark.DPSparkError, match="privacy.mechanism must be one of"):
        s.histogram(keys="city", universe=UNIVERSE, mechanism="nope", epsilon="1")
    with pytest.raises(TypeError, match="float"):
        s.histogram(keys="city", universe=UNIVERSE, mechanism="dense", epsilon=0.5)
    assert s.remaining.epsilon.as_fraction() == 1
