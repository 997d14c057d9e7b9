"""A local SparkSession with sane defaults for dpspark jobs and tests.

Quiet from the JVM's first line: the log configuration (:data:`QUIET_LOG4J`, errors only) is on the JVM's
command line (``spark.driver.extraJavaOptions``), the console progress bar is off, and the one line the JVM
itself prints before any logger exists (Spark's launcher always adds the incubating vector module, and Java
announces it) is dropped from the JVM's stderr; every other line of it is passed on unchanged.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from dpspark.errors import DPSparkError
from dpspark.engine.spark.java import ensure_java_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Defaults applied by :func:`local_session` (``conf`` entries override them).
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "ERROR",
    "spark.eventLog.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    # Counting throughput (local mode, where the driver JVM runs every task; see
    # scripts/bench/spark_counting.py). The partial aggregation's first-level
    # ("fast") hash map holds 2^16 keys by default; with ~10^6 distinct keys per
    # task nearly every row then misses it and probes the slower BytesToBytesMap
    # too. 2^20 keys halves the scan+aggregate CPU at 10^6 keys; it needs a
    # memory page of ~40 MB, i.e. a driver heap of about 3 GB or more.
    "spark.sql.codegen.aggregate.fastHashMap.capacityBit": "20",
    # Input splits of up to 512 MB: a file below cores * 512 MB is read by
    # exactly one task per core (the default 128 MB gave 3 tasks for a 330 MB
    # file on 2 cores, the third running alone). Fewer, larger tasks also shrink
    # the partial-aggregation output (about one record per distinct key per task).
    "spark.sql.files.maxPartitionBytes": "512m",
}

#: The embedded session's log4j2 configuration: errors only, to stderr, from the JVM's first line.
QUIET_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")

#: Lines the JVM prints to stderr before any logger exists; dropped by the gateway's stderr filter.
JVM_NOISE: tuple[bytes, ...] = (b"WARNING: Using incubator modules:",)

#: Driver (= executor, in local mode) JVM heap when neither ``driver_memory`` nor
#: ``conf`` sets one. Spark's own default is 1g, which makes the pages too small
#: for the large aggregation hash map above.
DEFAULT_DRIVER_MEMORY = "3g"


class SparkStartError(DPSparkError, RuntimeError):
    """The local Spark session could not start (bad master URL, Java gateway failure, port in use, ...)."""


def started_session(show: Callable[[str], None], what: str, start: Callable[[], SparkSession]) -> SparkSession:
    """``start()`` between two progress lines: what is starting, then the measured seconds it took.

    The start-up time depends on the machine and its load (a JVM took 84-170 s at load 15-22, issue 36 §7),
    so no line promises a duration; the second one states the elapsed time. Nothing here reads data.
    """
    show(f"starting {what} (a JVM; the time it took follows when it is up)")
    t0 = time.monotonic()
    spark = start()
    show(f"{what} up after {time.monotonic() - t0:.1f} s")  # report
    return spark


def local_session(
    app_name: str,
    cores: str = "local[2]",
    *,
    shuffle_partitions: int = 4,
    ui: bool = False,
    log_level: str = "ERROR",
    driver_memory: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Start (or return the running) local SparkSession.

    Sets JAVA_HOME to a usable Java >= 17 when needed, SPARK_LOCAL_IP to
    127.0.0.1 and the Python workers to this interpreter (unless already set),
    disables the UI and the event log, keeps shuffle partitions small, enables
    Arrow and sets the log level. ``cores`` is a Spark master URL such as
    ``local[2]``. ``driver_memory`` (e.g. ``"4g"``) only takes effect if no JVM
    is running yet. If a session is already running, Spark returns it and only
    runtime SQL settings from here apply. Without ``driver_memory`` (or
    ``spark.driver.memory`` in ``conf``) the heap is :data:`DEFAULT_DRIVER_MEMORY`.
    """
    ensure_java_home()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    from pyspark.sql import SparkSession

    running = SparkSession.getActiveSession()
    if running is not None:
        return running
    settings = dict(DEFAULT_CONF)
    settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings["spark.ui.enabled"] = "true" if ui else "false"
    settings["spark.log.level"] = log_level  # applies from SparkContext start (setLogLevel only after it)
    settings["spark.driver.memory"] = driver_memory if driver_memory is not None else DEFAULT_DRIVER_MEMORY
    settings.update(conf or {})
    settings["spark.driver.extraJavaOptions"] = quiet_java_options(settings.get("spark.driver.extraJavaOptions"))

    builder = SparkSession.builder.master(cores).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        _launch_quiet_gateway({"spark.master": cores, "spark.app.name": app_name, **settings})
        spark = builder.getOrCreate()
    except Exception as err:  # raised by Spark or Py4J: a setting or the machine, not a dpspark bug
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SparkStartError(f"cannot start a local Spark session (master {cores!r}): {first[:300]}") from err
    spark.sparkContext.setLogLevel(log_level)
    return spark


def quiet_java_options(given: str | None) -> str:
    """The driver JVM's options with :data:`QUIET_LOG4J` as its log configuration, unless ``given`` names one."""
    given = (given or "").strip()
    if "log4j2.configurationFile" in given or "log4j.configuration" in given:
        return given  # the user's own log configuration wins
    return f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()} {given}".strip()


def _launch_quiet_gateway(settings: Mapping[str, str]) -> None:
    """Start the JVM (as pyspark would, with ``settings``) with its stderr filtered by :func:`_forward_stderr`.

    No-op when a gateway exists already or pyspark is told to reuse one (``PYSPARK_GATEWAY_PORT``).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    conf = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        conf.set(key, value)
    # our own pipe, read from before the JVM starts: a launch that fails still shows its errors
    read_fd, write_fd = os.pipe()
    threading.Thread(target=_forward_stderr, args=(os.fdopen(read_fd, "rb"),), name="dpspark-jvm-stderr",
                     daemon=True).start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_fd})
    finally:
        os.close(write_fd)  # the JVM (and the Python workers it starts) hold the only write ends now
    SparkContext._ensure_initialized(gateway=gateway)


def _forward_stderr(stream: IO[bytes], out_fd: int = 2) -> None:
    """Copy the JVM's stderr to ours (file descriptor 2, where it would have gone), minus :data:`JVM_NOISE`."""
    with stream:
        for line in iter(stream.readline, b""):
            if not line.startswith(JVM_NOISE):
                try:
                    os.write(out_fd, line)
                except OSError:  # our stderr is gone (closed pipe): keep draining, or the JVM would block
                    pass


#: What a spark-submit job turns off unless the user set it (``--conf`` or a properties file):
#: Spark's UI and INFO logs reveal data volume and distinct keys and are curator-only.
QUIET_SUBMIT_CONF: dict[str, str] = {"spark.ui.enabled": "false", "spark.log.level": "WARN",
                                     "spark.ui.showConsoleProgress": "false"}


def active_session(app_name: str) -> SparkSession:
    """The spark-submit session, with the UI off and WARN logs unless the user's Spark conf sets them."""
    ensure_java_home()
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if SparkContext._active_spark_context is not None:  # already running: its static settings are fixed
        return builder.getOrCreate()
    SparkContext._ensure_initialized()  # the JVM gateway, so SparkConf() sees spark-submit's settings
    given = SparkConf()  # what spark-submit passed (--conf, --properties-file, spark-defaults.conf)
    for key, value in QUIET_SUBMIT_CONF.items():
        if not given.contains(key):
            builder = builder.config(key, value)
    return builder.getOrCreate()


def jvm_peak_rss_mib(spark: SparkSession) -> float | None:
    """The local JVM's peak resident memory (VmHWM, MiB) so far; None where /proc is unavailable.

    For benchmark reports: with a local master the driver JVM runs every task, so this is the job's
    peak JVM memory (the Python workers are separate processes and not included).
    """
    try:
        pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # report: kB -> MiB
    except (OSError, ValueError, AttributeError):
        return None
    return None
