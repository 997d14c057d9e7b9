"""Killed releases: SIGKILL ``dpspark release`` (driver, JVM and workers) at every stage; never a partial release.

After each kill the output path holds either nothing or a whole release whose
checksums verify; no process of the killed group survives; a release at the
path has its ledger spend recorded. A rerun to the same path then succeeds
(and removes the killed writer's temporary directory) when nothing was
published, and is refused, spending nothing, when a release is there.

Each trial starts a real ``dpspark release --master local[1]`` process (its own
JVM). Kill times are aimed at stages by reading the progress lines on stderr,
plus a random delay (seeded numpy Generator: it only decides *when* to kill).
"""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from dpspark.api.config import load_config
from dpspark.engine.runner import run_release
from dpspark.ledger import STATUS_RELEASED, STATUS_SPENT
from dpspark.rng import SeededRandom
from tests.support.fault_support import (
    DPSPARK,
    JVM_UP,
    STAGE_COLLECTED,
    STAGE_COUNTING,
    STAGE_NOISE,
    STAGE_WRITING,
    STAGE_WRITTEN,
    TEMP_DIR,
    ReleaseProcess,
    make_queries,
    records_for,
    release_state,
    snapshot,
    temp_dirs,
    write_config,
)

# spark_procs: each trial starts its own `dpspark release` JVMs (four at once), so the test runs in the parallel
# phase, not queued on the one-JVM phase (54 s of its critical path in CI, issue 35 §4); its reruns use the
# shared-session fixture, which that worker then starts for itself (tests/conftest.py)
pytestmark = [pytest.mark.spark, pytest.mark.spark_procs]

#: generous: a loaded 2-core machine has been seen to take 50 s to start the JVM and 60 s to count
STAGE_TIMEOUT = 600.0

#: (aim, delay window in seconds after the aim was seen; "startup" counts from process start).
#: Each trial costs a JVM start and, from the counting stage on, a Spark count: 15-100 s here,
#: depending on the load. The normal suite runs four trials at once (startup, counting, inside the write, after
#: the rename; the startup window spans the JVM launch); the slow test
#: runs 54 trials, two at a time.
AIMS = {
    "startup": (0.0, 6.0),  # Python imports, config, JVM launch
    JVM_UP: (0.0, 1.5),  # JVM up, SparkContext being made
    STAGE_COUNTING: (0.0, 3.0),  # Spark counting (spend already committed)
    STAGE_NOISE: (0.0, 0.05),  # noise being drawn on the driver
    STAGE_WRITING: (0.0, 0.05),  # the atomic write
    TEMP_DIR: (0.0, 0.001),  # inside the atomic write, once its temporary directory exists
    STAGE_WRITTEN: (0.0, 0.3),  # after the rename, while Spark shuts down
}
FAST_PLAN = ["startup", STAGE_COUNTING, TEMP_DIR, STAGE_WRITTEN]


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_queries(tmp_path_factory.mktemp("data") / "queries.parquet")


def start_and_kill(folder: Path, data: Path, ledger: Path, aim: str, delay: float) -> ReleaseProcess:
    """Start a release into ``folder/rel`` and kill its process group at ``aim`` + ``delay``."""
    folder.mkdir()
    cfg = write_config(folder, data, ledger=ledger, quick_jvm=True)
    proc = ReleaseProcess(cfg, folder / "rel")
    try:
        if aim == "startup":
            time.sleep(delay)
        elif aim == TEMP_DIR:
            assert proc.wait_for(STAGE_WRITING, STAGE_TIMEOUT) or proc.proc.poll() is not None, "never wrote"
            proc.wait_for_temp_dir(60.0)
            time.sleep(delay)
        else:
            assert proc.wait_for(aim, STAGE_TIMEOUT) or proc.proc.poll() is not None, f"never reached {aim!r}"
            time.sleep(delay)
    finally:
        proc.kill()
    return proc


def check_and_rerun(spark, proc: ReleaseProcess, ledger: Path, aim: str, delay: float, seed: int) -> dict[str, object]:
    """After a kill: nothing or a whole release, processes gone, spend recorded; then rerun to the same path."""
    folder = proc.config.parent
    out, cfg = proc.output, proc.config
    info = f"trial seed={seed} aim={aim!r} delay={delay:.3f}s stage={proc.stage_reached()!r}\n{proc.stderr[-3000:]}"
    if not proc.killed:
        assert proc.proc.returncode == 0, f"the release failed on its own: {info}"
    assert proc.survivors == [], f"processes of the killed group survived the group kill: {info}"

    state = release_state(out)  # raises on a partial or damaged release
    # the release appears only by the rename inside the write stage
    if proc.stage_reached() in ("startup", STAGE_COUNTING, STAGE_COLLECTED, STAGE_NOISE):
        assert state == "none", info
    if proc.stage_reached() == STAGE_WRITTEN:
        assert state == "whole", info
    leftovers = temp_dirs(out)
    others = sorted(p.name for p in folder.iterdir())
    expected = {"release.toml"} | ({"rel"} if state == "whole" else set()) | {p.name for p in leftovers}
    assert set(others) == expected, info
    records = records_for(ledger, out)
    assert len(records) <= 1, info
    if state == "whole":
        # spend is committed before any data is read: a published release always has its spend
        assert len(records) == 1 and records[0].status in (STATUS_SPENT, STATUS_RELEASED), info
    else:
        assert all(r.status == STATUS_SPENT for r in records), info  # killed: never marked released or refunded

    if state == "whole":
        before = snapshot(out)
        rerun = subprocess.run(
            [str(DPSPARK), "release", "--config", str(cfg), "--output", str(out)],
            cwd=folder, capture_output=True, text=True, timeout=300,
        )
        assert rerun.returncode == 2 and "already exists" in rerun.stderr, rerun.stderr
        assert snapshot(out) == before
        assert len(records_for(ledger, out)) == len(records), "a refused rerun spent budget"
    else:
        got = run_release(load_config(cfg, output=str(out)), spark=spark, rng=SeededRandom(seed),
                          progress=lambda msg: None)
        assert got == out and release_state(out) == "whole"
        assert temp_dirs(out) == [], "the rerun left the killed writer's temporary directory behind"
        assert [r.status for r in records_for(ledger, out)][-1] == STATUS_RELEASED
    return {"aim": aim, "delay": round(delay, 3), "stage": proc.stage_reached(), "killed": proc.killed,
            "state": state, "leftover_temp_dirs": len(leftovers), "seconds_at_kill": round(proc.seconds_at_kill, 1)}


def run_plan(
    spark, root: Path, data: Path, plan: list[tuple[str, float]], seed: int, parallel: int
) -> list[dict[str, object]]:
    """Run the trials, ``parallel`` releases at a time (they share one ledger, as concurrent jobs would).

    A plan entry is (aim, u), u in [0, 1) placing the kill in the aim's window. The write takes
    milliseconds, so its window follows the longest write seen so far (from two progress lines).
    """
    ledger = root / "ledger.sqlite"
    write_window = AIMS[STAGE_WRITING][1]
    results: list[dict[str, object]] = []
    for first in range(0, len(plan), parallel):
        batch = list(enumerate(plan[first:first + parallel], start=first))
        delays = [((0.0, 1.5 * write_window) if aim == STAGE_WRITING else AIMS[aim], u) for _, (aim, u) in batch]
        delays = [lo + u * (hi - lo) for (lo, hi), u in delays]
        started = time.monotonic()
        with ThreadPoolExecutor(len(batch)) as pool:
            futures = [pool.submit(start_and_kill, root / f"trial{i:02d}", data, ledger, aim, d)
                       for (i, (aim, _)), d in zip(batch, delays)]
            procs = [f.result() for f in futures]
        for (i, (aim, _)), d, proc in zip(batch, delays, procs):
            result = check_and_rerun(spark, proc, ledger, aim, d, seed * 1000 + i)
            gap = proc.gap(STAGE_WRITING, STAGE_WRITTEN)
            write_window = max(write_window, gap or 0.0)
            results.append(result)
            print("kill trial", i, result)
        print(f"kill batch of {len(batch)}: {time.monotonic() - started:.1f} s")  # report
    return results


def test_killed_release_leaves_nothing_or_a_whole_release(spark, tmp_path: Path, demo_data: Path) -> None:
    gen = np.random.default_rng(20261122)
    plan = [(aim, float(gen.uniform())) for aim in FAST_PLAN]
    results = run_plan(spark, tmp_path, demo_data, plan, seed=1, parallel=len(plan))
    # The write lasts milliseconds: on a loaded machine the poller can miss it and the kill land after the
    # rename (a valid "whole" outcome, checked like any other). Retry that one aim, at most twice, so the
    # suite still shows a kill inside the write.
    for attempt in range(2):
        if any(r["leftover_temp_dirs"] for r in results if r["aim"] == TEMP_DIR):
            break
        root = tmp_path / f"retry{attempt}"
        root.mkdir()
        results += run_plan(spark, root, demo_data, [(TEMP_DIR, 0.0)], seed=10 + attempt, parallel=1)
    states = {r["state"] for r in results}
    # the plan spans both outcomes: an early kill publishes nothing, a kill after the rename keeps the release
    assert states == {"none", "whole"}, results
    # and a kill inside the write left a temporary directory, which the rerun removed (checked per trial)
    assert any(r["leftover_temp_dirs"] for r in results if r["aim"] == TEMP_DIR), results


@pytest.mark.slow
def test_fifty_random_kills(spark, tmp_path: Path, demo_data: Path) -> None:
    """≥ 50 trials: every aim in turn with a random delay in its window, then the same checks."""
    gen = np.random.default_rng(7919)
    aims = list(AIMS)
    plan = [(aims[i % len(aims)], float(gen.uniform())) for i in range(54)]
    results = run_plan(spark, tmp_path, demo_data, plan, seed=2, parallel=2)
    assert len(results) >= 50
    assert {r["state"] for r in results} == {"none", "whole"}
