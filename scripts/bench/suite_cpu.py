#!/usr/bin/env python3
"""CPU of the test suite's phases (issue 35 §4): what each phase of ``scripts/test`` costs, JVMs included.

Usage: .venv/bin/python scripts/bench/suite_cpu.py [--phases 1 2] [--serial] [--warm] [--root DIR]
                                                   [--env now|main] [--out bench-results/suite_cpu]
                                                   [-- PYTEST ARGS...]

Runs the phases as ``scripts/test`` does (phase 2, the tests on the shared Spark session, beside phase 1, the
rest in ``-n auto --dist loadfile`` workers; ``--serial``: one after the other), each in a process session
of its own, and sums the CPU seconds (user + system) of every process in that session: pytest, its xdist
workers, the JVMs and the Python workers they start. A 0.3 s poll of /proc, so a process's last < 0.3 s
before it exits may be missed. ``--warm`` first runs ``python -m dpspark.gf.warmup`` (its own row).
``--root`` measures another checkout with this venv (e.g. ``git archive main | tar -x -C /tmp/base``): run
two of these at once for a before/after at the same load. Arguments after ``--`` go to both pytest runs
(e.g. test files). It never installs anything. ``--env now`` (the default) sets up the environment as
``scripts/test`` does now: Python's bytecode cache on (PYTHONDONTWRITEBYTECODE unset) and one calibration
memo for both phases (DPSPARK_CACHE_DIR, a fresh directory); ``--env main`` leaves the environment as
``scripts/test`` did at main 3680547 (for the before side of a before/after with ``--root``).

CPU time barely depends on the machine's load, wall time does: compare CPU. Prints a table (phase, tests,
wall, CPU, JVM CPU, Python CPU, load) and writes ``<out>/suite_cpu.json``. Floats are timing reports only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PHASE_MARKS = {
    "1": "(not spark or spark_procs) and not slow",
    "2": "spark and not spark_procs and not slow",
}
TICK = os.sysconf("SC_CLK_TCK")


def session_cpu(sid: int, seen: dict[tuple[str, str], tuple[str, float]]) -> None:  # report: CPU seconds
    """Record the CPU seconds so far of every process in session ``sid`` (keyed by pid and start time)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[3]) != sid:
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        seen[(pid, fields[19])] = (comm, (int(fields[11]) + int(fields[12])) / TICK)  # report


def run_measured(name: str, argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run ``argv`` in a new session, polling its processes' CPU until it exits; one result row."""
    load0 = os.getloadavg()[0]  # report
    t0 = time.monotonic()  # report
    seen: dict[tuple[str, str], tuple[str, float]] = {}  # report
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        while proc.poll() is None:
            session_cpu(proc.pid, seen)
            time.sleep(0.3)  # report
    by: dict[str, float] = {}  # report
    for comm, secs in seen.values():
        by[comm] = by.get(comm, 0.0) + secs  # report
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return {
        "phase": name, "rc": proc.returncode, "summary": tail[-1] if tail else "",
        "wall_s": round(time.monotonic() - t0, 1), "cpu_s": round(sum(by.values()), 1),  # report
        "jvm_cpu_s": round(by.get("java", 0.0), 1), "python_cpu_s": round(by.get("python", 0.0), 1),  # report
        "load_start": load0, "load_end": os.getloadavg()[0], "log": str(log),  # report
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", nargs="+", choices=sorted(PHASE_MARKS), default=sorted(PHASE_MARKS))
    parser.add_argument("--serial", action="store_true", help="phase 1, then phase 2 (default: side by side)")
    parser.add_argument("--warm", action="store_true", help="run the GF(2^m) kernel warmup first (its own row)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to test (default: this one)")
    parser.add_argument("--env", choices=("now", "main"), default="now", dest="env_of",
                        help="now: bytecode cache on, one calibration memo per run (as scripts/test); main: as at 3680547")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "suite_cpu")
    args, pytest_args = parser.parse_known_args()
    pytest_args = [a for a in pytest_args if a != "--"]
    root = args.root.resolve()
    py = str(ROOT / ".venv" / "bin" / "python")
    env = dict(os.environ, PYTHONPATH=str(root), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=py,
               PYSPARK_DRIVER_PYTHON=py)
    if args.env_of == "now":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if not env.get("DPSPARK_CACHE_DIR"):
            import atexit
            import shutil
            import tempfile

            env["DPSPARK_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpspark-test-calibrations-")
            atexit.register(shutil.rmtree, env["DPSPARK_CACHE_DIR"], True)
    sys.path.insert(0, str(ROOT))
    from dpspark.engine.spark.java import ensure_java_home

    env["JAVA_HOME"] = str(ensure_java_home())
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []

    def warm() -> None:
        rows.append(run_measured("warmup", [py, "-m", "dpspark.gf.warmup"], root, env, args.out / "warmup.log"))

    def argv(phase: str) -> list[str]:
        extra = ["-n", "auto", "--dist", "loadfile"] if phase == "1" else []
        return [py, "-m", "pytest", "-p", "no:cacheprovider", "-q", *extra, "-m", PHASE_MARKS[phase], *pytest_args]

    def job(phase: str) -> None:
        rows.append(run_measured(f"phase {phase}", argv(phase), root, env, args.out / f"phase{phase}.log"))

    t0 = time.monotonic()  # report
    if args.serial:
        if args.warm:
            warm()
        for phase in args.phases:
            job(phase)
    else:
        # scripts/test's schedule: phase 2 starts at once, beside the warmup; phase 1 after the warmup
        threads = [threading.Thread(target=job, args=("2",))] if "2" in args.phases else []
        for t in threads:
            t.start()
        if args.warm:
            warm()
        if "1" in args.phases:
            threads.append(threading.Thread(target=job, args=("1",)))
            threads[-1].start()
        for t in threads:
            t.join()
    total = {"phase": "total", "rc": max(r["rc"] for r in rows), "summary": "all rows above, side by side",
             "wall_s": round(time.monotonic() - t0, 1), "cpu_s": round(sum(r["cpu_s"] for r in rows), 1),  # report
             "jvm_cpu_s": round(sum(r["jvm_cpu_s"] for r in rows), 1),  # report
             "python_cpu_s": round(sum(r["python_cpu_s"] for r in rows), 1),  # report
             "load_start": min(r["load_start"] for r in rows), "load_end": rows[-1]["load_end"], "log": ""}  # report
    rows.sort(key=lambda r: r["phase"])
    rows.append(total)
    print(f"{'phase':<9} {'wall s':>8} {'CPU s':>8} {'JVM s':>8} {'Python s':>9} {'load':>11}  result")
    for r in rows:
        print(f"{r['phase']:<9} {r['wall_s']:>8.1f} {r['cpu_s']:>8.1f} {r['jvm_cpu_s']:>8.1f} "  # report
              f"{r['python_cpu_s']:>9.1f} {r['load_start']:>5.1f}-{r['load_end']:<5.1f}  {r['summary'][:80]}")  # report
    (args.out / "suite_cpu.json").write_text(json.dumps({"root": str(root), "pytest_args": pytest_args,
                                                         "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
