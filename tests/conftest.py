"""Shared fixtures: one local Spark session for every in-process Spark test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# The calibration memo (dpspark.disk_memo) of this run only, unless DPSPARK_CACHE_DIR is set: a
# fresh directory, so every certified calibration the tests need is computed by the certifier once per run
# (never read from an earlier run or from the user's cache), then read back by the other tests, xdist workers
# and CLI subprocesses that ask for the same exact parameters (they inherit the variable; scripts/test sets one
# for both phases). Its own tests point it elsewhere. Removed at exit by the process that made it.
if not os.environ.get("DPSPARK_CACHE_DIR"):
    import atexit
    import shutil
    import tempfile

    os.environ["DPSPARK_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpspark-test-calibrations-")
    atexit.register(shutil.rmtree, os.environ["DPSPARK_CACHE_DIR"], True)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A single local[2] SparkSession shared by the whole test run, stopped at the end.

    Tests that use it should be marked ``@pytest.mark.spark``. They must not
    stop it or change static configuration; runtime SQL settings changed with
    ``spark.conf.set`` should be restored by the test.
    """
    from dpspark.engine.spark.local import local_session
    from tests.support.spark_procs import TEST_JVM_OPTS

    # The C1 compiler only and the serial GC (as for the tests' own spark-submit JVMs): the tests run small
    # jobs whose generated code rarely gets hot enough for C2 to pay off, and C2's and the parallel GC's
    # threads took the second core from the parallel phase (issue 35 §4, measured on
    # tests/system/spark/test_spark_counts.py: 78 -> 42 CPU s, JVM + Python). Spark's own settings are the
    # product's defaults, so the tests run the plans a release runs.
    session = local_session("dpspark-tests", "local[2]", shuffle_partitions=2,
                            conf={"spark.driver.extraJavaOptions": TEST_JVM_OPTS})
    yield session
    session.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that uses the shared Spark session is a ``spark`` test, marked or not; a ``spark`` test that
    does not use it starts its own processes (spark-submit, a Connect server, a killed job) and is also
    ``spark_procs``.

    ``scripts/test`` runs the tests on the shared session in one process (one JVM), and the rest, the
    ``spark_procs`` tests included, in parallel workers: those wait on their own JVMs, so they need not
    queue behind the shared one. So both marks must be exact. A test that starts processes of its own *and*
    takes the session (the kill test: four ``dpspark release`` JVMs, then reruns in-process) is marked
    ``spark_procs`` in its file: it runs in a parallel worker, which starts the session for it.
    """
    for item in items:
        uses_session = "spark" in getattr(item, "fixturenames", ()) or _asks_for_the_session(item)
        if uses_session and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
        if not uses_session and item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.spark_procs)
    _compact_files_last(items)


def _compact_files_last(items: list[pytest.Item]) -> None:
    """Move the files whose session tests may build a compact release to the end (stable; a file stays whole).

    ``scripts/test`` starts the one-JVM phase beside the GF(2^m) kernel warmup (1-2 min of CPU on a fresh
    clone): a compact build that starts before the warmup has cached the kernels compiles all of them again
    (the first compact e2e test took 33 s in CI, issue 35 §4). Run last, these files load the cached kernels.
    Order only: every test still runs. A file is matched by the word ``compact`` in its source.
    """
    session_files = {item.path for item in items if item.get_closest_marker("spark") is not None
                     and item.get_closest_marker("spark_procs") is None}
    late = {path for path in session_files if "compact" in _source(path)}
    if late:
        items[:] = sorted(items, key=lambda item: item.path in late)


def _source(path: object) -> str:
    """A test file's text ("" when unreadable: the file then keeps its place)."""
    try:
        return Path(str(path)).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


_ASKS: dict[object, bool] = {}


def _asks_for_the_session(item: pytest.Item) -> bool:
    """A spark-marked test that takes the shared session with ``request.getfixturevalue("spark")`` (a
    parametrized test whose Arrow cases need no JVM) uses the session too: as a ``spark_procs`` test it ran in
    a parallel worker and started a JVM of its own there (30-40 s each in CI, issue 35 §4)."""
    fn = getattr(item, "function", None)
    if fn is None or item.get_closest_marker("spark") is None:
        return False
    if fn not in _ASKS:
        import inspect

        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            source = ""
        _ASKS[fn] = 'getfixturevalue("spark")' in source or "getfixturevalue('spark')" in source
    return _ASKS[fn]
