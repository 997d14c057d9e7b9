"""Helpers for the fault tests: demo data, release configs, and ``dpspark release`` subprocesses killed by group.

Every subprocess is started in its own session (``start_new_session=True``), so
its process group holds the Python driver, the JVM that spark-submit starts
and Spark's Python workers; :meth:`ReleaseProcess.kill` sends SIGKILL to that
group by its id and reaps the driver. Nothing here changes how a release is
made: faults come from outside (signals, full or read-only filesystems) or
from test-only wrappers installed by the tests themselves.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from dpspark.ledger import Ledger, SpendRecord
from dpspark.lookup import open_release
from dpspark.release import ReleaseFormatError
from tests.support.spark_procs import TEST_JVM_OPTS

REPO = Path(__file__).resolve().parents[2]
DPSPARK = Path(sys.executable).parent / "dpspark"
DATASET = "fault.queries"

#: progress-line fragments printed by dpspark.engine.runner, in order (see dpspark.engine.runner._run_spark_and_mechanism)
STAGE_COUNTING = "reading input and counting keys on Spark"
STAGE_COLLECTED = "counts collected on the driver"
STAGE_NOISE = "drawing noise on the driver"
STAGE_WRITING = "writing the release atomically"
STAGE_WRITTEN = "release written"
#: printed by Spark's launcher once the JVM is up (before any dpspark progress line)
JVM_UP = "log4j"
#: not a line: the writer's temporary directory next to the output path has appeared (inside the atomic write)
TEMP_DIR = "temporary directory exists"


def make_queries(path: Path, *, rows: int = 5000, users: int = 1000, vocab: int = 500, seed: int = 7) -> Path:
    """The demo query data of ``scripts/gen_queries.py`` (synthetic input, seeded)."""
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_queries.py"), str(path), "--rows", str(rows),
         "--users", str(users), "--vocab", str(vocab), "--seed", str(seed)],
        check=True, capture_output=True, timeout=120,
    )
    return path


def write_config(
    folder: Path,
    data: Path,
    *,
    ledger: Path,
    output: str = "rel",
    max_units: int = 1000,
    unit: bool = True,
    extra_privacy: str = "",
    name: str = "release.toml",
    quick_jvm: bool = False,
) -> Path:
    """A stability release config over the demo data, spending from ``ledger`` (total epsilon 1000).

    ``quick_jvm`` runs a freshly started driver JVM with the C1 compiler only and the serial GC:
    about a third less time to a first count on this 2-core machine; it changes no result.
    """
    jvm = f'"spark.driver.extraJavaOptions" = "{TEST_JVM_OPTS}"' if quick_jvm else ""
    text = f"""
[input]
path = "{data}"
[keys]
columns = ["query"]
[universe]
kind = "string"
max_bytes = 15
[privacy]
mechanism = "stability"
epsilon = "1"
delta = "1e-9"
max_units = {max_units}
{'unit_column = "user_id"' if unit else ''}
{extra_privacy}
[output]
path = "{output}"
[budget]
ledger = "{ledger}"
dataset = "{DATASET}"
total_epsilon = "1000"
total_delta = "1/1000"
[spark]
"spark.sql.shuffle.partitions" = "2"
{jvm}
"""
    path = folder / name
    path.write_text(text)
    return path


def group_members(sid: int) -> list[int]:
    """PIDs of live (non-zombie) processes in session ``sid`` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            found.append(int(entry))
    return found


class ReleaseProcess:
    """A ``dpspark release`` subprocess in its own session, with its stderr lines timestamped as they arrive."""

    def __init__(self, config: Path, output: Path, *, master: str | None = "local[1]", cwd: Path | None = None) -> None:
        cmd = [str(DPSPARK), "release", "--config", str(config), "--output", str(output)]
        if master is not None:
            cmd += ["--master", master]
        self.config, self.output = config, output
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, cwd=cwd or config.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, text=True, errors="replace",
        )
        self.lines: list[tuple[float, str]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.killed = False
        self.survivors: list[int] = []
        self.seconds_at_kill = 0.0

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append((time.monotonic() - self.started, line.rstrip("\n")))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, fragment: str, timeout: float) -> bool:
        """True once a stderr line contains ``fragment``; False if the process ended first or on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if any(fragment in line for _, line in self.lines):
                    return True
                if self.proc.poll() is not None and not self._reader.is_alive():
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.2))

    def wait_for_temp_dir(self, timeout: float) -> bool:
        """Poll (every 0.5 ms) until the writer's temporary directory exists; False if the process ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if temp_dirs(self.output):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.0005)
        return False

    def kill(self) -> None:
        """SIGKILL the whole process group (driver, JVM, Python workers) and reap the driver."""
        self.seconds_at_kill = time.monotonic() - self.started
        if self.proc.poll() is None:
            self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=60)
        self._reader.join(timeout=10)
        deadline = time.monotonic() + 10
        while group_members(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        # anything of this session still alive escaped the group kill (e.g. it changed its group):
        # note it for the test to fail on, and stop it by its PID
        self.survivors = group_members(self.proc.pid)
        for pid in self.survivors:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def finish(self, timeout: float) -> int:
        """Wait for a normal exit (killing the group if it overruns); returns the exit code."""
        try:
            self.proc.wait(timeout=timeout)
        finally:
            self.kill()
        return self.proc.returncode

    def gap(self, first: str, second: str) -> float | None:
        """Seconds between the stderr lines containing ``first`` and ``second`` (None if either is missing)."""
        times = [next((t for t, line in self.lines if frag in line), None) for frag in (first, second)]
        return None if None in times else times[1] - times[0]

    @property
    def stderr(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def stage_reached(self) -> str:
        """The last dpspark stage named on stderr (or 'startup')."""
        last = "startup"
        for _, line in self.lines:
            for stage in (STAGE_COUNTING, STAGE_COLLECTED, STAGE_NOISE, STAGE_WRITING, STAGE_WRITTEN):
                if stage in line:
                    last = stage
        return last


def release_state(path: Path) -> str:
    """'none' if nothing is at ``path``, 'whole' if a release there opens with every checksum verified.

    Anything else (a partial directory, a damaged file) raises AssertionError.
    """
    if not os.path.lexists(path):
        return "none"
    try:
        open_release(path)
    except ReleaseFormatError as err:
        raise AssertionError(f"a partial or damaged release is at the final path: {err}") from None
    return "whole"


def temp_dirs(path: Path) -> list[Path]:
    """Leftover temporary directories of the release at ``path``."""
    prefix = f".{path.name}.tmp-"
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(prefix))


def records_for(ledger: Path, path: Path) -> list[SpendRecord]:
    """Ledger rows of DATASET whose release path is ``path``."""
    if not ledger.exists():
        return []
    return [r for r in Ledger(ledger).releases(DATASET) if Path(r.release_path) == path]


def snapshot(path: Path) -> dict[str, bytes]:
    """{file name: bytes} of a release directory."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


# ---- executor failures: run in a subprocess with its own local[N,F] Spark (F = task.maxFailures) -------------


def fail_first_attempt(marker_dir: str, label: str):
    """A mapInArrow function that fails each partition's first attempt (after emitting one batch), then passes.

    A marker file per (label, partition) records the failure, so every partition
    fails exactly once however Spark re-runs it; an ``attempts`` line per call
    lets the test count the failures and the retries.
    """

    def run(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        part = ctx.partitionId()
        marker = Path(marker_dir) / f"failed-{label}-p{part}"
        with open(Path(marker_dir) / "attempts", "a") as log:
            log.write(f"{label} stage={ctx.stageId()} partition={part} attempt={ctx.attemptNumber()}\n")
        first = not marker.exists()
        if first:
            marker.touch()
        emitted = False
        for batch in batches:
            yield batch
            if first and not emitted:
                raise RuntimeError(f"injected executor failure ({label}, partition {part})")
            emitted = True
        if first:
            raise RuntimeError(f"injected executor failure ({label}, partition {part})")

    return run


def flaky_sparse_counts(real, marker_dir: str):
    """Test-only wrapper of dpspark.engine.spark.counts.sparse_counts: a first-attempt failure before and after counting."""

    def wrapped(df, cfg, rng):
        df = df.mapInArrow(fail_first_attempt(marker_dir, "input"), df.schema)
        counts = real(df, cfg, rng)
        return counts.mapInArrow(fail_first_attempt(marker_dir, "counts"), counts.schema)

    return wrapped


def retry_experiment(config: str, clean_out: str, flaky_out: str, marker_dir: str, master: str) -> None:
    """Release the same data twice with the same SeededRandom: once clean, once with failing first attempts."""
    import dpspark.engine.spark.counts as counts_module
    from dpspark.api.config import load_config
    from dpspark.engine.runner import run_release
    from dpspark.rng import SeededRandom
    from dpspark.engine.spark.local import local_session

    # a short-lived JVM: C1 only and the serial GC, as for the suite's other test JVMs (issue 35 §4)
    spark = local_session("dpspark-retry-test", master, shuffle_partitions=2,
                          conf={"spark.driver.extraJavaOptions": TEST_JVM_OPTS})
    quiet = lambda msg: None  # noqa: E731
    run_release(load_config(config, output=clean_out), spark=spark, rng=SeededRandom(b"retries"), progress=quiet)
    real = counts_module.sparse_counts
    counts_module.sparse_counts = flaky_sparse_counts(real, marker_dir)
    try:
        run_release(load_config(config, output=flaky_out), spark=spark, rng=SeededRandom(b"retries"), progress=quiet)
    finally:
        counts_module.sparse_counts = real
        spark.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["retries"]:
        retry_experiment(*sys.argv[2:7])
    else:
        raise SystemExit("usage: python -m tests.support.fault_support retries CONFIG CLEAN_OUT FLAKY_OUT MARKER_DIR MASTER")
