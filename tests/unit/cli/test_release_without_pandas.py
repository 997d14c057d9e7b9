"""An Arrow CLI release runs without pandas (issue 35 §1: `import pyarrow.dataset` pulled it in, 0.7-1.2 s of a
cold release), and pyarrow's pandas-free paths give the same bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[3]

CONFIG = """[input]
path = "{data}"
[privacy]
mechanism = "bounded_noise"
epsilon = "1"
delta = "1/1000000"
max_units = 100
unit_column = "uid"
[[queries]]
name = "s"
kind = "sum"
column = "x"
lo = "0"
hi = "10"
filter = "b = TRUE"
[output]
path = "{out}"
"""

#: runs the CLI in-process, then reports whether pandas was loaded
RUN = ("import sys; from dpspark.cli.app import main; rc = main(sys.argv[1:]); "
       "print('PANDAS', 'pandas' in sys.modules); raise SystemExit(rc)")

#: the seeded Arrow golden cases with an import of pandas refused from the start (as the CLI does after planning)
GOLDEN = """
import json, sys
from dpspark.cli.common import without_pandas
with without_pandas():
    from tests.support.golden import CASES, fingerprint_case, load_golden
    golden = load_golden()
    bad = [k for k in sys.argv[1:] if fingerprint_case(CASES[k]) != golden[k]]
print(json.dumps({"pandas": "pandas" in sys.modules, "differ": bad}))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_an_arrow_release_never_imports_pandas(tmp_path: Path) -> None:
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"uid": list(range(50)), "x": [i % 10 for i in range(50)],
                             "b": [i % 3 == 0 for i in range(50)]}), data)
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.format(data=data, out=tmp_path / "rel"))
    done = subprocess.run([sys.executable, "-c", RUN, "release", "--config", str(config)], env=_env(),
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PANDAS False" in done.stdout
    assert (tmp_path / "rel" / "manifest.json").exists()


def test_golden_arrow_releases_are_identical_without_pandas() -> None:
    cases = ["dense", "stability", "pure_sparse", "bounded_noise", "gaussian", "kary_sampler",
             "bernoulli_sampler", "groups"]
    done = subprocess.run([sys.executable, "-c", GOLDEN, *cases], env=_env(), capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"pandas": False, "differ": []}
