"""The Spark backend's input cache: cached only when the mechanism reads its input twice or more (derived from
its stages), and unpersisted when ``open_backend``'s block ends - also when the run raises, and also for a
Session release on the user's own DataFrame. The Spark and Arrow sums kernels agree."""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa
import pytest

from dpspark.engine.backend import open_backend
from dpspark.engine.stages import CountsStage, SumsStage
from dpspark.mechanisms import registry
from dpspark.mechanisms.base import StageInfo
from dpspark.rng import SeededRandom
from tests.support.plugins.toy.mechanism import ToyGeometric

pytestmark = pytest.mark.spark

UNIVERSE = {"kind": "int_range", "lo": 0, "hi": 9}


class TwoPass(ToyGeometric):
    """The toy histogram, counted twice from the input (two input-reading passes): the input is cached."""

    name: ClassVar[str] = "toy_two_pass"
    seen: ClassVar[list[bool]] = []
    fail: ClassVar[bool] = False

    def stages(self) -> list[StageInfo]:
        return [StageInfo("counts", "first count"), StageInfo("counts again", "second count", True)]

    def run(self, backend: Any, rng: Any, progress: Any) -> Any:
        TwoPass.seen.append(backend.frame.is_cached)
        first = backend.compute(CountsStage.from_spec(self.spec))
        if TwoPass.fail:
            raise RuntimeError("planted failure after one pass")
        assert backend.compute(CountsStage.from_spec(self.spec))[1] == first[1]
        TwoPass.seen.append(backend.frame.is_cached)
        return super().run(backend, rng, progress)


@pytest.fixture
def two_pass() -> Any:
    registry.register(TwoPass)
    TwoPass.seen, TwoPass.fail = [], False
    yield TwoPass
    registry.unregister(TwoPass.name)


def _frame(spark: Any) -> Any:
    return spark.createDataFrame([(u, u % 7) for u in range(60)], "u long, k long")


def _release(spark: Any, df: Any, mechanism: str, tmp_path: Any) -> Any:
    from dpspark.api.session import Session

    with Session(df, max_units=100, unit_column="u", spark=spark, rng=SeededRandom(5)) as s:
        return s.release(mechanism=mechanism, epsilon="1", keys="k", universe=UNIVERSE, beta="1/1000",
                         output=tmp_path / mechanism)


def test_a_one_pass_release_leaves_the_dataframe_uncached(spark, tmp_path) -> None:
    df = _frame(spark)
    _release(spark, df, "dense", tmp_path)
    assert not df.is_cached


def test_a_two_pass_release_caches_then_unpersists(spark, tmp_path, two_pass) -> None:
    df = _frame(spark)
    _release(spark, df, two_pass.name, tmp_path)
    assert two_pass.seen == [True, True]  # cached for both passes
    assert not df.is_cached and not df.storageLevel.useMemory  # released at the end of the block


def test_a_failed_run_still_unpersists(spark, tmp_path, two_pass) -> None:
    df = _frame(spark)
    two_pass.fail = True
    with pytest.raises(Exception):
        _release(spark, df, two_pass.name, tmp_path)
    assert two_pass.seen == [True]
    assert not df.is_cached


def test_a_dataframe_the_user_cached_stays_cached(spark) -> None:
    df = _frame(spark).cache()
    try:
        with open_backend("spark", rng=SeededRandom(1), data=df, passes=2) as backend:
            assert backend.frame.is_cached
        assert df.is_cached  # the caller's cache is the caller's to release
    finally:
        df.unpersist()


def test_open_backend_caches_by_input_reads(spark) -> None:
    df = _frame(spark)
    with open_backend("spark", rng=SeededRandom(1), data=df, passes=1) as backend:
        assert not backend.frame.is_cached
    with open_backend("spark", rng=SeededRandom(1), data=df, passes=2) as backend:
        assert backend.frame.is_cached
    assert not df.is_cached


def test_spark_and_arrow_sums_agree(spark) -> None:
    """The generic sums stage (fixed point, per-unit clipping, keyed batches) on both engines, same generator."""
    rows = [(u % 23, (u * 37 % 41) / 4 - 3.5 if u % 9 else None) for u in range(400)] + [(5, 2.5), (6, -2.5)]
    table = pa.table({"u": pa.array([r[0] for r in rows], pa.int64()), "x": pa.array([r[1] for r in rows], pa.float64())})
    for batches in (None, 4):
        stage = SumsStage(("x",), (-20,), (25,), 1, "u", 100, batches=batches)
        with open_backend("arrow", rng=SeededRandom(3), source=table) as arrow:
            want = arrow.compute(stage)
        with open_backend("spark", rng=SeededRandom(3), data=spark.createDataFrame(table.to_pandas())) as sp:
            got = sp.compute(stage)
        assert got == want and sp.passes_run == arrow.passes_run == 1
