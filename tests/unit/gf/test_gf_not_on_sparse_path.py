"""No JIT on the path of a sparse release: dense, stability and pure_sparse never import dpspark.gf or numba.

A fresh interpreter plans each example config, runs the mechanism's driver side on stand-in counts (the
engine's count stage replaced by fixed exact counts) and writes the release; numba's compiler must never
have been loaded, so the first sparse release after an install starts without a compile. The control case
(compact) shows the check has teeth: it does import both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

_DRIVER = r"""
import json, sys
from pathlib import Path
from dpspark.api.config import load_config
from dpspark.engine.backend import finish_counts
from dpspark.engine.runner import write_release
from dpspark.rng import SeededRandom
from dpspark.mechanisms.registry import construct

cfg = load_config(Path(sys.argv[1]))
mech = construct(cfg)
rng = SeededRandom(7)


class Counts:
    def compute(self, stage):
        return finish_counts([1, 5, 9], [3, 2, 1], stage, rng)


payload = mech.run(Counts(), rng, lambda msg: None)
out = write_release(cfg, payload, rng.name, mech.release_kind)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite") or m.startswith("dpspark.gf"))
print(json.dumps({"out": str(out), "heavy": heavy[:8], "gf": "dpspark.gf" in sys.modules, "numba": "numba" in sys.modules}))
"""


def _config(tmp_path: Path, name: str) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = (ROOT / "conf" / name).read_text(encoding="utf-8")
    stand_in = tmp_path / "input.parquet"
    pq.write_table(pa.table({"x": [1]}), stand_in)
    text = re.sub(r'^path = "[^"]*\.parquet"', f'path = "{stand_in}"', text, count=1, flags=re.M)
    text = re.sub(r'^path = "\.\./demo-output/releases/[^"]*"', f'path = "{tmp_path / "release"}"', text, count=1, flags=re.M)
    text = re.sub(r"^max_units = \d+", "max_units = 40", text, count=1, flags=re.M)  # small n: a fast run
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _run(tmp_path: Path, name: str) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", _DRIVER, str(_config(tmp_path, name))], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["ages-dense.toml", "queries-stability.toml", "queries-pure-sparse.toml"])
def test_sparse_release_imports_no_jit(tmp_path: Path, name: str) -> None:
    got = _run(tmp_path, name)
    assert Path(str(got["out"])).is_dir()
    assert got["heavy"] == [] and got["gf"] is False and got["numba"] is False, f"a {name} release imported {got['heavy']}"


def test_compact_release_control_imports_gf(tmp_path: Path) -> None:
    got = _run(tmp_path, "queries-compact.toml")
    assert Path(str(got["out"])).is_dir()
    assert got["gf"] is True and got["numba"] is True
