"""Every answers / sample / distribution / Gaussian / groups example config through ``spark-submit jobs/release.py``.

Each config in conf/ runs as it is, except that its input is generated into a temporary folder by the
generator ``scripts/examples.py`` registers for it and its output goes there too. The release must
open with its kind's reader, state its privacy under add/remove and replacement, and pass ``inspect``.
``bernoulli_sampler`` runs in the default suite; the others (one JVM each, 1-4 minutes on 2 cores) are
``slow``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpspark.cli.app import main as cli
from dpspark.lookup import open_release
from dpspark.lookup.statement_base import StatementLookup
from tests.support.spark_procs import ROOT, SUBMIT_CONF, conf_args, run_process, spark_env, spark_submit

pytestmark = pytest.mark.spark

FAST = ["bernoulli_sampler.toml"]
SLOW = ["kary_sampler.toml", "product_sampler.toml", "product_learner.toml", "product_learner_array.toml",
        "answers_bounded_noise.toml",
        "answers_gaussian.toml", "gaussian_covariance.toml", "gaussian_mean.toml", "gaussian_learner.toml",
        "groups-public-keys.toml", "groups-private-keys.toml", "sql_measurements.toml"]
CASES = [pytest.param(c, id=c) for c in FAST] + [pytest.param(c, id=c, marks=pytest.mark.slow) for c in SLOW]


def _examples() -> object:
    spec = importlib.util.spec_from_file_location("examples", ROOT / "scripts" / "examples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_the_lists_cover_every_statement_example() -> None:
    statement_kinds = {p.name for p in (ROOT / "conf").glob("*.toml")
                       if not re.search(r'^\[keys\]', p.read_text(), re.M) or "sampler" in p.name}
    assert statement_kinds <= set(FAST + SLOW)


@pytest.mark.parametrize("name", CASES)
def test_example_runs_through_spark_submit(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    examples = _examples()
    config = ROOT / "conf" / name
    source = examples.input_path(config)
    data = tmp_path / source.name
    gen = examples.GENERATORS[source.name]
    subprocess.run([sys.executable, str(ROOT / gen[0]), str(data), *gen[1:]], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, timeout=600)
    text = re.sub(r'^path = "[^"]*"', f'path = "{data}"', config.read_text(encoding="utf-8"), count=1, flags=re.M)
    (tmp_path / name).write_text(text, encoding="utf-8")
    out = tmp_path / "release"
    argv = spark_submit("--master", "local[2]", *conf_args(SUBMIT_CONF), ROOT / "jobs" / "release.py",
                        "--config", tmp_path / name, "--output", out)
    run = run_process(name, argv, env=spark_env(tmp_path), cwd=tmp_path, log=tmp_path / "submit.log")
    assert run.returncode == 0, run.output[-4000:]
    rel = open_release(out)
    assert isinstance(rel, StatementLookup)
    assert {"add_remove", "replacement"} & set(rel.statements)
    assert not rel.manifest.rng_test_only
    assert cli(["inspect", str(out)]) == 0
    assert "Checksums: all files match the manifest" in capsys.readouterr().out
