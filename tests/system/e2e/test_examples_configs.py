"""Every example config in conf/ parses and plans as it is (its input replaced by a stand-in file)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.api.config import load_config
from dpspark.engine.runner import describe_plan, plan_text
from dpspark.mechanisms.registry import names

CONF = Path(__file__).resolve().parents[3] / "conf"
CONFIGS = sorted(CONF.glob("*.toml"))


def test_there_are_examples_for_every_builtin_histogram_mechanism() -> None:
    found = [re.search(r'^mechanism\s*=\s*"([^"]+)"', p.read_text(), re.M) for p in CONFIGS]
    mechanisms = {m.group(1) for m in found if m is not None}  # an [sql] config names no mechanism (its query does)
    assert {"dense", "stability", "pure_sparse", "compact"} <= mechanisms
    assert mechanisms <= set(names())


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_config_parses_and_plans(tmp_path: Path, path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    stand_in = tmp_path / "input.parquet"
    pq.write_table(pa.table({"x": [1]}), stand_in)
    text = re.sub(r'^path = "[^"]*\.parquet"', f'path = "{stand_in}"', text, count=1, flags=re.M)
    (tmp_path / path.name).write_text(text, encoding="utf-8")
    for public in CONF.glob("*.csv"):  # public tables an [sql] config names beside it (conf/sql_regions.csv)
        (tmp_path / public.name).write_bytes(public.read_bytes())
    cfg = load_config(tmp_path / path.name)
    plan = describe_plan(cfg)
    assert plan["mechanism"] == cfg.mechanism and plan["privacy"] and plan["accuracy"]
    assert not re.search(r"\d{21,}", plan_text(plan))  # issue 25: --dry-run prints no run of more than 20 digits


def test_scripts_examples_generates_only_what_the_named_configs_read() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("examples", CONF.parent / "scripts" / "examples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for path in CONFIGS:
        inp = mod.input_path(path)
        assert inp is None or inp.name in mod.GENERATORS, f"{path.name} reads {inp}, which no generator makes"
