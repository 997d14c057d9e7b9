"""Issue 36 §7: progress messages report measured time and what is running, never a guessed duration."""

from __future__ import annotations

import re
import time
from pathlib import Path

from dpspark.engine.spark.local import started_session
from dpspark.gf.warmup import heartbeat

ROOT = Path(__file__).resolve().parents[3]
#: a promised duration: "about a minute", "takes 10-20 s", "(10–20 s)", "a few seconds"
PROMISE = re.compile(r"about a minute|about \d+ (s|sec|seconds|min|minutes)\b|takes \d+\s*[-–]\s*\d+ ?s\b|"
                     r"\(\d+\s*[-–]\s*\d+ ?s\)|a few seconds", re.IGNORECASE)


def _message_lines() -> list[tuple[str, str]]:
    """String literals printed to users: every line of dpspark's modules that calls a printer, and lib.sh's log lines."""
    out = []
    for path in sorted((ROOT / "dpspark").rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.search(r"\b(show|progress|say|print|log|warn|warning)\(", line):
                out.append((str(path.relative_to(ROOT)), line))
    for line in (ROOT / "scripts" / "lib.sh").read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("log "):
            out.append(("scripts/lib.sh", line))
    return out


def test_no_message_promises_a_duration() -> None:
    lines = _message_lines()
    assert any("installing dpspark" in line for _, line in lines)  # the scan sees lib.sh's install line
    assert any("compiling the GF(2^m) kernels" in line for _, line in lines)  # and the compile line
    bad = [(path, line.strip()) for path, line in lines if PROMISE.search(line)]
    assert not bad, bad
    assert PROMISE.search('show("starting local Spark (the JVM takes 10-20 s)")')  # the pattern has teeth
    assert PROMISE.search('log "installing (first run builds pyspark: about a minute)"')


def test_the_install_step_logs_its_measured_time() -> None:
    text = (ROOT / "scripts" / "lib.sh").read_text(encoding="utf-8")
    assert 'log "installed dpspark[$extras] in $((SECONDS - t0)) s"' in text


def test_heartbeat_says_what_runs_and_the_elapsed_time_until_the_block_ends() -> None:
    said: list[str] = []
    with heartbeat(said.append, "compiling the GF(2^m) kernels", every=0.05):
        time.sleep(0.4)
    count = len(said)
    time.sleep(0.2)
    assert count >= 2 and len(said) == count  # it beat while the block ran, and stopped with it
    assert all(re.fullmatch(r"dpspark: still compiling the GF\(2\^m\) kernels: \d+ s elapsed", s) for s in said)


def test_a_spark_start_is_announced_then_timed() -> None:
    said: list[str] = []
    session = object()
    assert started_session(said.append, "local Spark", lambda: (time.sleep(0.05), session)[1]) is session
    assert len(said) == 2 and said[0].startswith("starting local Spark")
    assert re.fullmatch(r"local Spark up after \d+\.\d s", said[1])
    assert not PROMISE.search(said[0])
