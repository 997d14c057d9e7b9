"""Executor failures: Spark task retries never change the counts, and yield exactly one release.

A subprocess runs the real job twice on one ``local[2,4]`` session (two cores,
``task.maxFailures`` = 4: the ``local[N,F]`` form allows task retries in local
mode) with the same SeededRandom: once clean, once through a test-only wrapper
of ``sparse_counts`` whose Arrow maps fail every partition's first attempt,
before and after the shuffle, after emitting a batch. The two releases must
hold identical bins: the counts are a deterministic function of the data
(the contribution-bounding hash is recomputed identically on a retry) and the
noise is drawn once, on the driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dpspark.ledger import STATUS_RELEASED
from tests.support.fault_support import REPO, group_members, make_queries, records_for, release_state, write_config

pytestmark = pytest.mark.spark


def test_task_retries_do_not_change_the_release(tmp_path: Path) -> None:
    data = make_queries(tmp_path / "queries.parquet", rows=3000, users=800, vocab=300)
    ledger = tmp_path / "ledger.sqlite"
    cfg = write_config(tmp_path, data, ledger=ledger)
    clean, flaky, markers = tmp_path / "out-clean" / "rel", tmp_path / "out-flaky" / "rel", tmp_path / "markers"
    markers.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fault_support", "retries", str(cfg), str(clean), str(flaky), str(markers),
         "local[2,4]"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None or group_members(proc.pid):
            os.killpg(proc.pid, 9)
            proc.wait()
    assert proc.returncode == 0, err[-4000:]

    attempts = (markers / "attempts").read_text().splitlines()
    failed = sorted(p.name for p in markers.iterdir() if p.name.startswith("failed-"))
    # both injection points ran, every partition failed once, and each failure was followed by a retry
    assert any(f.startswith("failed-input-") for f in failed) and any(f.startswith("failed-counts-") for f in failed)
    retried = [a for a in attempts if not a.endswith("attempt=0")]
    assert len(retried) >= len(failed), attempts
    # the markers prove the failures; the embedded session's log keeps task failures (whose messages can quote a
    # record) out of its stderr (dpspark/engine/spark/log4j2-quiet.properties)
    assert "injected executor failure" not in err

    assert release_state(clean) == release_state(flaky) == "whole"
    for out in (clean, flaky):  # exactly one release, no temporary directories, one released spend
        assert sorted(p.name for p in out.parent.iterdir()) == ["rel"]
        assert [r.status for r in records_for(ledger, out)] == [STATUS_RELEASED]
    a, b = pq.read_table(clean / "bins.parquet"), pq.read_table(flaky / "bins.parquet")
    assert a.num_rows > 0 and a.equals(b)
    ma, mb = (json.loads((p / "manifest.json").read_text()) for p in (clean, flaky))
    for section in ("mechanism", "privacy", "accuracy", "universe", "config"):
        assert ma[section] == mb[section], section
