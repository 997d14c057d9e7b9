"""A local SparkSession with sane defaults for dpspark jobs and tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from dpspark.spark.java import ensure_java_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Defaults applied by :func:`local_session` (``conf`` entries override them).
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.eventLog.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}


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
    runtime SQL settings from here apply.
    """
    ensure_java_home()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    from pyspark.sql import SparkSession

    settings = dict(DEFAULT_CONF)
    settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings["spark.ui.enabled"] = "true" if ui else "false"
    if driver_memory is not None:
        settings["spark.driver.memory"] = driver_memory
    settings.update(conf or {})

    builder = SparkSession.builder.master(cores).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark
