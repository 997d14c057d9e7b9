"""Start and stop real Spark processes for tests: spark-submit, a standalone cluster, a Spark Connect server.

Every process is started in a new session, so its process group id is its own
PID; its output goes to a log file (no pipe can fill up and block it). It is
stopped by that id: SIGTERM to the group (which also reaches the Python
workers and executors it forked), then SIGKILL after a bounded wait. The
context managers stop everything they started in ``finally``, so a failing
test leaves nothing running. Everything binds to 127.0.0.1 on ports picked
free at start; every wait is bounded and fails with the tail of the logs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(sys.executable)
VENV_BIN = PYTHON.parent
#: Started-up JVMs on a loaded 2-core machine can take long; still bounded.
START_TIMEOUT = 180.0
JOB_TIMEOUT = 420.0
STOP_TIMEOUT = 10.0

#: Short-lived test JVMs: the C1 compiler only and the serial GC halve their CPU time (measured:
#: a local[2] spark-submit of the test job, 40 s -> 19 s user CPU), which matters on 2 shared cores.
TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: Keeps test jobs small: few shuffle partitions, no UI, loopback only, quiet console.
SUBMIT_CONF: dict[str, str] = {
    "spark.driver.extraJavaOptions": TEST_JVM_OPTS,
    "spark.executor.extraJavaOptions": TEST_JVM_OPTS,
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
}


def spark_home() -> Path:
    """The pyspark package directory: pip's pyspark ships bin/, sbin/ and jars/ there."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def conf_args(conf: dict[str, str]) -> list[str]:
    """``--conf k=v`` arguments for spark-submit."""
    return [arg for k, v in conf.items() for arg in ("--conf", f"{k}={v}")]


def spark_env(tmp: Path, *, executor_python: Path | None = None, **extra: str) -> dict[str, str]:
    """Environment for Spark processes: Java, SPARK_HOME, loopback, private log/work dirs under ``tmp``.

    ``executor_python`` is the Python the executors run (default: this venv's).
    A SPARK_CONF_DIR under ``tmp`` holds a quiet log4j2 config (warnings only).
    """
    from dpspark.engine.spark.java import ensure_java_home

    conf_dir = tmp / "spark-conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "log4j2.properties").write_text((ROOT / "conf" / "log4j2.properties").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        JAVA_HOME=str(ensure_java_home()),
        SPARK_HOME=str(spark_home()),
        SPARK_CONF_DIR=str(conf_dir),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(tmp / "spark-local"),
        SPARK_LOG_DIR=str(tmp / "spark-logs"),
        SPARK_PID_DIR=str(tmp),
        PYSPARK_PYTHON=str(executor_python or PYTHON),
        PYSPARK_DRIVER_PYTHON=str(PYTHON),
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        SPARK_LAUNCHER_OPTS=TEST_JVM_OPTS,
        SPARK_DAEMON_JAVA_OPTS=TEST_JVM_OPTS,
    )
    env.update(extra)
    return env


class SparkProcess:
    """One started process (and its process group), logging to a file."""

    def __init__(self, name: str, argv: Sequence[str], *, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            self.popen = subprocess.Popen(
                self.argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        """The PID, which is also the process group id."""
        return self.popen.pid

    def alive(self) -> bool:
        """Whether the process itself is still running."""
        return self.popen.poll() is None

    def output(self) -> str:
        """Everything the process printed so far."""
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 40) -> str:
        """The last lines of the log, for failure messages."""
        return f"--- {self.name} (pid {self.pid}) {self.log} ---\n" + "\n".join(self.output().splitlines()[-lines:])

    def _signal_group(self, sig: int) -> bool:
        try:
            os.killpg(self.pid, sig)
            return True
        except ProcessLookupError:
            return False

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout`` s; reaps the process."""
        if self._signal_group(signal.SIGTERM):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self._group_alive():
                self.popen.poll()  # reap the leader so the group check sees only live members
                time.sleep(0.2)
            if self._group_alive():
                self._signal_group(signal.SIGKILL)
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL was sent
            pass

    def wait(self, timeout: float) -> int:
        """The exit code; on timeout the group is stopped and the test fails with the log tail."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"{self.name} did not finish within {timeout:.0f} s\n{self.tail()}") from None


@dataclass(frozen=True)
class Finished:
    """A finished command: exit code, its output (stdout and stderr merged), and how long it took."""

    returncode: int
    output: str
    seconds: float


def run_process(name: str, argv: Sequence[str], *, env: dict[str, str], cwd: Path, log: Path,
                timeout: float = JOB_TIMEOUT) -> Finished:
    """Run a command to completion under PID control; whatever happens, its group is gone afterwards."""
    start = time.monotonic()
    proc = SparkProcess(name, argv, env=env, cwd=cwd, log=log)
    try:
        code = proc.wait(timeout)
    finally:
        proc.stop()
    return Finished(code, proc.output(), time.monotonic() - start)


def wait_until(check: Callable[[], bool], what: str, procs: Sequence[SparkProcess], timeout: float) -> None:
    """Poll ``check`` until true; fail early if one of ``procs`` died, or after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        dead = [p for p in procs if not p.alive()]
        if dead or time.monotonic() > deadline:
            why = f"{dead[0].name} exited with {dead[0].popen.returncode}" if dead else f"timed out after {timeout:.0f} s"
            raise AssertionError(f"waiting for {what}: {why}\n" + "\n".join(p.tail() for p in procs))
        time.sleep(0.5)


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def spark_submit(*args: str | Path) -> list[str]:
    """argv of this venv's ``spark-submit`` (the console script pip installs with pyspark)."""
    return [str(VENV_BIN / "spark-submit"), *map(str, args)]


@dataclass(frozen=True)
class ExecutorPython:
    """A Python for executors that cannot import dpspark by itself, and records each launch.

    ``wrapper`` (give it as PYSPARK_PYTHON) appends a line to ``launches`` and
    runs ``python``: a venv that sees this venv's third-party packages (numpy,
    pyarrow, gmpy2, ...) but not dpspark, like a cluster image with the
    dependencies installed. A job whose Python workers ran (``launched()``) and
    succeeded therefore got dpspark from what it shipped.
    """

    python: Path
    wrapper: Path
    launches: Path

    def launched(self) -> int:
        """How many Python worker processes were started through the wrapper."""
        return len(self.launches.read_text().splitlines()) if self.launches.exists() else 0


def make_executor_python(tmp: Path) -> ExecutorPython:
    """Build an :class:`ExecutorPython` under ``tmp``.

    A plain path in a ``.pth`` file is added to ``sys.path`` without running
    that directory's own ``.pth`` files, so the editable install's import hook
    for dpspark stays out.
    """
    venv = tmp / "executor-venv"
    subprocess.run([str(PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()
    Path(purelib, "dpspark-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    launches = tmp / "executor-python.launches"
    wrapper = tmp / "executor-python"
    wrapper.write_text(f'#!/bin/sh\necho "$$" >> "{launches}"\nexec "{python}" "$@"\n')
    wrapper.chmod(0o755)
    return ExecutorPython(python, wrapper, launches)


# ---- standalone cluster -------------------------------------------------------------------------


@dataclass
class Cluster:
    """A running standalone cluster: master URL, master web UI port, and its processes."""

    master_url: str
    ui_port: int
    procs: list[SparkProcess]

    def state(self) -> dict:
        """The master's JSON status page."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
            return json.loads(resp.read())

    def alive_workers(self) -> int:
        """Workers registered with the master and ALIVE (0 while the UI is not up yet)."""
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except (OSError, ValueError):
            return 0


@contextmanager
def standalone_cluster(tmp: Path, *, workers: int = 2, cores: int = 1, memory: str = "512m",
                       timeout: float = START_TIMEOUT) -> Iterator[Cluster]:
    """A master and ``workers`` workers from pyspark's own ``spark-class``, on 127.0.0.1; all stopped on exit."""
    spark_class = spark_home() / "bin" / "spark-class"
    env = spark_env(tmp, SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
                    SPARK_DAEMON_MEMORY="256m")
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[SparkProcess] = []
    try:
        procs.append(SparkProcess(
            "master", [spark_class, "org.apache.spark.deploy.master.Master",
                       "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
            env=env, cwd=tmp, log=tmp / "logs" / "master.log"))
        cluster = Cluster(url, ui, procs)
        wait_until(lambda: port_open(port), f"the master on port {port}", procs, timeout)
        for i in range(workers):
            work = tmp / f"worker{i}"
            work.mkdir(parents=True, exist_ok=True)
            procs.append(SparkProcess(
                f"worker{i}", [spark_class, "org.apache.spark.deploy.worker.Worker",
                               "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                               "--cores", str(cores), "--memory", memory, "--work-dir", str(work), url],
                env=env, cwd=tmp, log=tmp / "logs" / f"worker{i}.log"))
        wait_until(lambda: cluster.alive_workers() >= workers, f"{workers} workers to register", procs, timeout)
        yield cluster
    finally:
        for proc in reversed(procs):
            proc.stop()


# ---- Spark Connect server -----------------------------------------------------------------------


@dataclass
class ConnectServer:
    """A running Spark Connect server: its ``sc://`` URL and process."""

    url: str
    proc: SparkProcess


@contextmanager
def connect_server(tmp: Path, *, master: str = "local[2]", timeout: float = START_TIMEOUT,
                   executor_python: Path | None = None) -> Iterator[ConnectServer]:
    """A Spark Connect server in the foreground (spark-submit of SparkConnectServer) on 127.0.0.1; stopped on exit.

    ``sbin/start-connect-server.sh`` daemonizes by default; running the class
    directly keeps the server's PID ours, so it can be stopped reliably.
    """
    port = free_port()
    env = spark_env(tmp, executor_python=executor_python, SPARK_CONNECT_MODE="0")
    conf = dict(SUBMIT_CONF, **{
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
    })
    argv = spark_submit("--master", master, "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                        "--name", "dpspark-test-connect", *conf_args(conf))
    proc = SparkProcess("connect-server", argv, env=env, cwd=tmp, log=tmp / "logs" / "connect-server.log")
    try:
        wait_until(lambda: port_open(port), f"the Spark Connect server on port {port}", [proc], timeout)
        yield ConnectServer(f"sc://127.0.0.1:{port}", proc)
    finally:
        proc.stop()


# ---- release inputs and configs -----------------------------------------------------------------

#: The heavy key of :func:`write_unit_input` and its exact count after contribution bounding.
HEAVY_KEY = "café"
HEAVY_USERS = 1000
ABSENT_KEY = "zz never seen"


def write_unit_input(path: Path, *, users: int = 3000, seed: int = 11) -> None:
    """Parquet (user_id, query) whose bounded count of HEAVY_KEY is exactly HEAVY_USERS.

    Users 1..HEAVY_USERS hold HEAVY_KEY (1-4 duplicate rows each) and otherwise
    only rows that the job drops (NULL query, a query longer than the 15-byte
    universe), so each keeps HEAVY_KEY whatever the keyed hash picks. Every
    other user holds 1-3 distinct other queries, duplicated, so contribution
    bounding really chooses. Some rows have a NULL user (dropped).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)  # test input only; no release noise comes from it
    user_ids: list[int | None] = []
    queries: list[str | None] = []
    for u in range(1, users + 1):
        if u <= HEAVY_USERS:
            keys = [HEAVY_KEY] * int(rng.integers(1, 5))
            if u % 7 == 0:
                keys.append(None)  # type: ignore[arg-type]
            if u % 11 == 0:
                keys.append("a query longer than fifteen bytes")
        else:
            distinct = {f"q{int(z)}" for z in rng.zipf(1.3, size=int(rng.integers(1, 4))) if z < 500}
            keys = [k for k in sorted(distinct) for _ in range(int(rng.integers(1, 3)))]
        user_ids.extend([u] * len(keys))
        queries.extend(keys)
    user_ids.extend([None] * 50)
    queries.extend([HEAVY_KEY] * 50)
    table = pa.table({"user_id": pa.array(user_ids, pa.int64()), "query": pa.array(queries, pa.string())})
    pq.write_table(table, path)


def write_config(path: Path, *, input_path: Path, output: Path, max_units: int,
                 unit_column: str | None = None) -> Path:
    """A stability-histogram release config (epsilon 1, delta 1e-9) whose error bars fail w.p. <= 1e-9."""
    unit = f'unit_column = "{unit_column}"\n' if unit_column else ""
    path.write_text(
        f'[input]\npath = "{input_path}"\nformat = "parquet"\n\n'
        '[keys]\ncolumns = ["query"]\n\n'
        '[universe]\nkind = "string"\nmax_bytes = 15\n\n'
        '[privacy]\nmechanism = "stability"\nepsilon = "1"\ndelta = "1e-9"\nbeta = "1e-9"\n'
        f"max_units = {max_units}\n{unit}\n"
        f'[output]\npath = "{output}"\n',
        encoding="utf-8",
    )
    return path
