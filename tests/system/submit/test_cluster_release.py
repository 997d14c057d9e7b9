"""The release job on a standalone Spark cluster (a master and two 1-core, 512 MiB workers on 127.0.0.1).

Submitted as a real deployment would: ``spark-submit --master spark://...
--py-files dpspark.zip`` with the zip built by ``scripts/package_job``. The
executors' Python (PYSPARK_PYTHON) has numpy/pyarrow/gmpy2 but cannot import
dpspark by itself, so the ``mapInArrow`` keyed pick only runs if the zip
shipped. The heavy key's count after contribution bounding is exactly
HEAVY_USERS; the error-bar check fails with probability <= 1e-9.
Slow (minutes on a loaded 2-core machine): run with ``scripts/test --slow``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dpspark.lookup import open_release
from tests.support.spark_procs import (
    ABSENT_KEY,
    HEAVY_KEY,
    HEAVY_USERS,
    ROOT,
    SUBMIT_CONF,
    conf_args,
    make_executor_python,
    run_process,
    spark_env,
    spark_submit,
    standalone_cluster,
    write_config,
    write_unit_input,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_release_on_a_standalone_cluster_with_py_files(tmp_path: Path) -> None:
    data = tmp_path / "visits.parquet"
    write_unit_input(data)
    release = tmp_path / "releases" / "visits"
    config = write_config(tmp_path / "release.toml", input_path=data, output=release, max_units=3000,
                          unit_column="user_id")
    executor = make_executor_python(tmp_path)
    built = subprocess.run([str(ROOT / "scripts" / "package_job"), str(tmp_path / "dist")],
                           capture_output=True, text=True, timeout=120, check=True)
    package = Path(built.stdout.strip().splitlines()[-1])

    with standalone_cluster(tmp_path, workers=2, cores=1, memory="512m") as cluster:
        argv = spark_submit(
            "--master", cluster.master_url, "--py-files", package,
            "--executor-memory", "512m", "--executor-cores", "1", "--total-executor-cores", "2",
            *conf_args(SUBMIT_CONF), ROOT / "jobs" / "release_histogram.py", "--config", config,
        )
        run = run_process("spark-submit-cluster", argv, env=spark_env(tmp_path, executor_python=executor.wrapper),
                          cwd=tmp_path, log=tmp_path / "submit.log")
        assert run.returncode == 0, run.output[-4000:] + "\n" + "\n".join(p.tail(30) for p in cluster.procs)
        apps = cluster.state().get("completedapps", [])
    assert [a["state"] for a in apps] == ["FINISHED"]
    assert apps[0]["cores"] == 2  # one executor on each worker
    fetched = sorted(p.parent.parent.parent.name for p in tmp_path.glob("worker*/app-*/*/dpspark.zip"))
    assert fetched == ["worker0", "worker1"]  # both executors fetched the shipped package
    assert executor.launched() >= 1

    assert run.output.strip().splitlines()[-1] == str(release)
    rel = open_release(release)
    assert rel.manifest.rng_name == "os.urandom" and not rel.manifest.rng_test_only
    est = rel.estimate(HEAVY_KEY)
    assert HEAVY_USERS > est.holds_above
    assert abs(est.value - HEAVY_USERS) <= est.a
    assert rel.count(ABSENT_KEY) == 0
