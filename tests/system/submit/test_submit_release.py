"""The release job through ``spark-submit --master local[2] jobs/release_histogram.py``, as a real user runs it.

Input: scripts/gen_queries.py's Zipf queries without a unit column, so every
row is a unit and the true count of a key is its number of rows (computed here
with pyarrow). Config: StabilityHistogram at epsilon 1, delta 1e-9, beta 1e-9.
Each error-bar check below fails with probability <= 1e-9 (per-query bound
for true counts above ``holds_above``), so this file's false-alarm rate is
<= 3e-9.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from dpspark.lookup import open_release
from tests.support.spark_procs import (
    ABSENT_KEY,
    PYTHON,
    ROOT,
    SUBMIT_CONF,
    Finished,
    conf_args,
    run_process,
    spark_env,
    spark_submit,
    write_config,
)

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Submitted:
    tmp: Path
    data: Path
    config: Path
    release: Path
    run: Finished


def _submit(tmp: Path, config: Path, name: str) -> Finished:
    argv = spark_submit("--master", "local[2]", *conf_args(SUBMIT_CONF),
                        ROOT / "jobs" / "release_histogram.py", "--config", config)
    return run_process(name, argv, env=spark_env(tmp), cwd=tmp, log=tmp / f"{name}.log")


@pytest.fixture(scope="module")
def submitted(tmp_path_factory: pytest.TempPathFactory) -> Submitted:
    tmp = tmp_path_factory.mktemp("submit")
    data = tmp / "queries.parquet"
    subprocess.run(
        [str(PYTHON), str(ROOT / "scripts" / "gen_queries.py"), str(data),
         "--rows", "20000", "--users", "3000", "--vocab", "2000"],
        check=True, capture_output=True, timeout=180,
    )
    release = tmp / "releases" / "queries"
    config = write_config(tmp / "release.toml", input_path=data, output=release, max_units=20000)
    return Submitted(tmp, data, config, release, _submit(tmp, config, "spark-submit"))


def _true_counts(data: Path) -> dict[str, int]:
    import pyarrow.parquet as pq

    table = pq.read_table(data, columns=["query"]).group_by("query").aggregate([("query", "count")])
    return dict(zip(table.column("query").to_pylist(), table.column("query_count").to_pylist()))


def _digests(release: Path) -> dict[str, tuple[str, int]]:
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(release.iterdir())
    }


def test_spark_submit_publishes_a_release_within_its_error_bars(submitted: Submitted) -> None:
    run = submitted.run
    assert run.returncode == 0, run.output[-4000:]
    assert run.output.strip().splitlines()[-1] == str(submitted.release)
    rel = open_release(submitted.release)
    assert rel.manifest.rng_name == "os.urandom" and not rel.manifest.rng_test_only
    assert rel.manifest.algorithm == "StabilityHistogram"
    truth = _true_counts(submitted.data)
    heavy = sorted(truth, key=truth.get, reverse=True)[:3]  # type: ignore[arg-type]
    for key in heavy:
        est = rel.estimate(key)
        assert truth[key] > est.holds_above  # the per-query bound applies to this key
        assert abs(est.value - truth[key]) <= est.a, (key, est.a)
    assert ABSENT_KEY not in truth
    assert rel.count(ABSENT_KEY) == 0  # stability releases only keys present in the data


def test_rerun_on_the_same_output_is_refused_and_leaves_the_release_alone(submitted: Submitted) -> None:
    assert submitted.run.returncode == 0, "the first release failed; see the other test"
    before = _digests(submitted.release)
    again = _submit(submitted.tmp, submitted.config, "spark-submit-again")
    assert again.returncode != 0
    assert "a release already exists there; refusing to overwrite it" in again.output
    assert "reading input" not in again.output  # refused before any Spark work
    assert _digests(submitted.release) == before
    assert sorted(p.name for p in submitted.release.parent.iterdir()) == [submitted.release.name]
