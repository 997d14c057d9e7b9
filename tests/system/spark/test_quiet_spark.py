"""Issue 25 §4.1: an embedded-Spark release prints dpspark's lines and nothing of Spark's (errors only).

The release runs in a subprocess, as a user runs it, so the JVM starts fresh and everything it prints from
its first line on is seen: no console progress bar, no log4j banner, no WARN lines, no "Setting default log
level", no JVM notice about the incubating vector module.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.engine.spark.local import QUIET_LOG4J, _forward_stderr, quiet_java_options
from tests.support.configs import dense_toml

ROOT = Path(__file__).resolve().parents[3]
#: what Spark printed before the fix (issue 25 §4.1), and what else it must not print
SPARK_NOISE = ("[Stage", "Using Spark's default log4j profile", "NativeCodeLoader", "Setting default log level",
               "Setting Spark log level", "To adjust logging level", "WARNING: Using incubator modules", " WARN ",
               " INFO ")


def test_quiet_java_options_keeps_the_users_own_log_configuration() -> None:
    assert quiet_java_options(None) == f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()}"
    assert quiet_java_options("-Xss4m").endswith(" -Xss4m") and "log4j2-quiet" in quiet_java_options("-Xss4m")
    own = "-Dlog4j2.configurationFile=file:/etc/mine.properties"
    assert quiet_java_options(own) == own
    assert QUIET_LOG4J.is_file() and "rootLogger.level = error" in QUIET_LOG4J.read_text()


def test_jvm_stderr_filter_drops_only_the_incubator_notice(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    sink = tmp_path / "stderr"
    with open(sink, "wb") as out:
        worker = threading.Thread(target=_forward_stderr, args=(os.fdopen(read_fd, "rb"), out.fileno()))
        worker.start()
        os.write(write_fd, b"WARNING: Using incubator modules: jdk.incubator.vector\n12:00:01 ERROR X: boom\n"
                           b"Traceback (most recent call last)\n")
        os.close(write_fd)
        worker.join(timeout=10)
    assert sink.read_bytes() == b"12:00:01 ERROR X: boom\nTraceback (most recent call last)\n"


@pytest.mark.spark
@pytest.mark.slow
def test_embedded_spark_release_prints_no_spark_lines(tmp_path: Path) -> None:
    pq.write_table(pa.table({"v": pa.array([i % 10 for i in range(200)], pa.int64())}), tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text(dense_toml("v"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "dpspark.cli.app", "release", "--config", str(tmp_path / "c.toml"),
                           "--master", "local[2]"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "release" / "manifest.json").is_file()
    for text in (proc.stdout, proc.stderr):
        for noise in SPARK_NOISE:
            assert noise not in text, (noise, text[-3000:])
    stray = [ln for ln in proc.stderr.splitlines() if ln and not ln.startswith("[dpspark ")
             and "RuntimeWarning" not in ln and "runpy" not in ln]
    assert stray == [], stray  # every stderr line is dpspark's own
    assert "starting local Spark" in proc.stderr and "release written" in proc.stderr
