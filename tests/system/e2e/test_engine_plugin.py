"""The engine's design test: a family folder added from the test suite (tests/support/plugins/toy/) runs
config -> Spark -> release -> inspect -> lookup, for a mechanism on a built-in kind and one on its own kind."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.api.config import ConfigError, load_config
from dpspark.engine.runner import describe_plan, run_release
from dpspark.lookup import open_release
from dpspark.rng import SeededRandom
from tests.support.plugins import toy as toy_family
from tests.support.plugins.toy.mechanism import ToyGeometric

CONFIG = """
[input]
path = "in.parquet"
[keys]
columns = ["age"]
[universe]
kind = "int_range"
lo = 0
hi = 99
[privacy]
mechanism = "toy_geometric"
epsilon = "1"
beta = "1/1000000000"
max_units = 500
unit_column = "user"
[output]
path = "release"
"""


@pytest.fixture
def toy() -> object:
    toy_family.register()
    yield ToyGeometric
    toy_family.unregister()


def test_unknown_until_registered(tmp_path: Path) -> None:
    (tmp_path / "in.parquet").write_bytes(b"")
    (tmp_path / "c.toml").write_text(CONFIG)
    with pytest.raises(ConfigError, match="privacy.mechanism must be one of"):
        load_config(tmp_path / "c.toml")


@pytest.mark.spark
def test_plugin_mechanism_runs_end_to_end(spark, tmp_path: Path, toy, capsys) -> None:
    ages = [20] * 120 + [35] * 60 + [70] * 5
    pq.write_table(pa.table({"user": pa.array(range(len(ages)), pa.int64()), "age": pa.array(ages, pa.int64())}),
                   tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text(CONFIG)
    cfg = load_config(tmp_path / "c.toml")
    assert describe_plan(cfg)["plan"]["mechanism"] == "toy_geometric"
    out = run_release(cfg, spark=spark, rng=SeededRandom(b"toy"), progress=lambda m: None)
    rel = open_release(out)
    bar = toy.__call__(cfg).counting.accuracy("1/1000000000")
    for age, true in ((20, 120), (35, 60), (70, 5), (50, 0)):
        assert abs(rel.count(age) - true) <= bar  # false alarm <= 1e-9 per key
    assert rel.manifest.raw["config"]["mechanism"] == "toy_geometric"
    assert cli(["inspect", str(out)]) == 0
    assert "BasicHistogram" in capsys.readouterr().out
    assert cli(["lookup", str(out), "20", "35"]) == 0
    assert "20" in capsys.readouterr().out
