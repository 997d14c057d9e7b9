"""The release job against a real Spark Connect server: ``dpspark release --remote sc://127.0.0.1:PORT``.

The server (SparkConnectServer, local[2], loopback) runs its Python workers
with a Python that cannot import dpspark by itself, so the job only works if
:func:`dpspark.engine.spark.remote.remote_session` shipped the package. The input has
a unit column (so the ``mapInArrow`` keyed pick runs on the server) and a heavy
key whose count after contribution bounding is exactly HEAVY_USERS. The error
bar check fails with probability <= 1e-9 (beta of the config).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dpspark.lookup import open_release
from tests.support.spark_procs import (
    ABSENT_KEY,
    HEAVY_KEY,
    HEAVY_USERS,
    PYTHON,
    VENV_BIN,
    ConnectServer,
    ExecutorPython,
    Finished,
    connect_server,
    make_executor_python,
    run_process,
    spark_env,
    write_config,
    write_unit_input,
)

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Setup:
    tmp: Path
    config: Path
    executor: ExecutorPython
    server: ConnectServer


@dataclass(frozen=True)
class RemoteRun:
    release: Path
    run: Finished
    executor: ExecutorPython


def _client_env(tmp: Path) -> dict[str, str]:
    env = spark_env(tmp)
    del env["JAVA_HOME"]  # the Connect client needs no JVM
    return env


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("connect")
    data = tmp / "visits.parquet"
    write_unit_input(data)
    config = write_config(tmp / "release.toml", input_path=data, output=tmp / "releases" / "visits",
                          max_units=3000, unit_column="user_id")
    executor = make_executor_python(tmp)
    with connect_server(tmp, executor_python=executor.wrapper) as server:
        yield Setup(tmp, config, executor, server)


@pytest.fixture(scope="module")
def remote_run(setup: Setup) -> RemoteRun:
    release = setup.tmp / "releases" / "visits"
    run = run_process("dpspark-release-remote",
                      [VENV_BIN / "dpspark", "release", "--remote", setup.server.url, "--config", setup.config],
                      env=_client_env(setup.tmp), cwd=setup.tmp, log=setup.tmp / "client.log")
    if run.returncode != 0:
        print(setup.server.proc.tail(80))
    return RemoteRun(release, run, setup.executor)


def test_release_over_spark_connect(remote_run: RemoteRun) -> None:
    run = remote_run.run
    assert run.returncode == 0, run.output[-4000:]
    assert run.output.strip().splitlines()[-1] == str(remote_run.release)
    rel = open_release(remote_run.release)
    assert rel.manifest.rng_name == "os.urandom" and not rel.manifest.rng_test_only
    assert rel.manifest.config["unit_column"] == "user_id"
    est = rel.estimate(HEAVY_KEY)
    assert HEAVY_USERS > est.holds_above
    assert abs(est.value - HEAVY_USERS) <= est.a
    assert rel.count(ABSENT_KEY) == 0


def test_the_server_ran_python_workers_that_only_had_the_shipped_dpspark(remote_run: RemoteRun) -> None:
    assert remote_run.run.returncode == 0, remote_run.run.output[-4000:]
    assert remote_run.executor.launched() >= 1  # mapInArrow ran in the dpspark-less Python


_UNSHIPPED = """
import sys
from dpspark.api.config import load_config
from dpspark.engine.runner import run_release
from dpspark.engine.spark.remote import remote_session
run_release(load_config(sys.argv[2], output=sys.argv[3]), spark=remote_session(sys.argv[1], ship_code=False),
            show_data_errors=True)  # the curator's opt-in: the worker's ImportError is shown, not withheld
"""


def test_without_the_shipped_package_the_servers_workers_cannot_run_the_job(setup: Setup) -> None:
    # Negative control for the test above: same server, no upload.
    out = setup.tmp / "releases" / "unshipped"
    run = run_process("unshipped", [PYTHON, "-c", _UNSHIPPED, setup.server.url, setup.config, out],
                      env=_client_env(setup.tmp), cwd=setup.tmp, log=setup.tmp / "unshipped.log", timeout=300)
    assert run.returncode != 0
    assert "No module named 'dpspark'" in run.output
    assert not out.exists()
