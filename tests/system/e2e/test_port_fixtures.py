"""The four histogram mechanisms give bit-identical seeded releases to the fixtures in tests/support/data/port_fixtures.

The fixtures were made by ``tests/support/data/port_fixtures/make_fixtures.py`` with the code before the engine port;
a change that alters any mechanism's seeded output, or its exact parameters, fails here.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from dpspark.api.config import load_config
from dpspark.engine.runner import run_release
from dpspark.rng import SeededRandom

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).resolve().parents[2] / "support" / "data" / "port_fixtures"
MECHANISMS = ("dense", "stability", "pure_sparse", "compact")
#: manifest parts that are the mechanism's exact parameters and statements (not time, paths or checksums)
EXACT_PARTS = ("mechanism", "privacy", "accuracy", "compact", "config", "universe", "universe_size", "max_units", "kind")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _exact(manifest: dict) -> dict:
    return {k: manifest.get(k) for k in EXACT_PARTS}


@pytest.mark.parametrize("mech", MECHANISMS)
def test_seeded_release_matches_pre_port_fixture(spark, tmp_path: Path, mech: str) -> None:
    for name in ("input.parquet", f"{mech}.toml"):
        shutil.copyfile(FIXTURES / name, tmp_path / name)
    cfg = load_config(tmp_path / f"{mech}.toml")
    out = run_release(cfg, spark=spark, rng=SeededRandom(b"port-fixtures"), progress=lambda m: None)
    data = next(p for p in out.iterdir() if p.name in ("bins.parquet", "coefficients.arrow"))
    want = FIXTURES / f"{mech}.{data.name}"
    assert _sha(data) == _sha(want), f"{mech}: the data file differs from the pre-port fixture"
    got = json.loads((out / "manifest.json").read_text())
    fixture = json.loads((FIXTURES / f"{mech}.manifest.json").read_text())
    assert got["config"]["mechanism"] == mech
    assert _exact(got) == _exact(fixture)
