#!/usr/bin/env python3
"""CPU of one groups stage on Spark against the Arrow engine, on the same 10^7-row file (issue 35 §2).

Usage: .venv/bin/python scripts/bench/spark_groups_cpu.py [--rows 10000000] [--cases rows,units]
       [--master local[2]] [--out bench-results/spark_groups_cpu.json]

The file is scripts/bench/groups_pass.py's (three string key columns, 852 public keys; ``rows``: every row a
unit; ``units``: the user_id unit column with k = 2, c = 3). Each engine runs in its own child process, which
computes the stage twice and times the second run (warm: imports, JIT and Python workers; the JVM start is
outside). CPU is the whole process tree's (the child, its JVM and the Python workers: utime + stime + the
reaped children's, from /proc, at the start and the end of the timed run). Prints a table and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(__file__))


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant, their reaped children included."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(name)
        parents[pid] = int(fields[1])
        cpu[pid] = sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick  # utime stime cutime cstime
    total = 0.0
    for pid in cpu:
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            total += cpu[pid]
    return total


def child(engine: str, kind: str, path: str, master: str) -> dict:
    import groups_pass

    stage = groups_pass.stage_of(kind, path)
    if engine == "arrow":
        from dpspark.engine.backend import open_backend
        from dpspark.rng import SystemRandom

        def once() -> int:
            with open_backend("arrow", rng=SystemRandom(), source=path) as backend:
                return len(backend.compute(stage))
    else:
        from dpspark.engine.spark.local import local_session
        from dpspark.mechanisms.groups.spark_stats import groups_spark

        spark = local_session("bench-groups-cpu", master)
        df = spark.read.parquet(path)

        def once() -> int:
            return len(groups_spark(df, stage, bytes(range(16))))
    once()
    c0, t0 = tree_cpu(os.getpid()), time.perf_counter()
    groups = once()
    return {"cpu_s": tree_cpu(os.getpid()) - c0, "wall_s": time.perf_counter() - t0, "groups": groups}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--cases", default="rows,units")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="bench-results/spark_groups_cpu.json")
    args = ap.parse_args()
    if args.child:
        print("__RESULT__ " + json.dumps(child(*args.child)), flush=True)
        return 0
    import groups_pass

    env = dict(os.environ, PYTHONPATH=ROOT)
    env.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "public.parquet")
        groups_pass.workload(path, args.rows, args.users, "public")
        for kind in args.cases.split(","):
            row = {"case": kind, "load": [os.getloadavg()[0]]}
            for engine in ("arrow", "spark"):
                p = subprocess.run([sys.executable, __file__, "--child", engine, kind, path, args.master],
                                   capture_output=True, text=True, env=env)
                line = [x for x in p.stdout.splitlines() if x.startswith("__RESULT__ ")]
                if not line:
                    sys.stderr.write(p.stderr[-3000:])
                    return 1
                row[engine] = json.loads(line[0][len("__RESULT__ "):])
            row["load"].append(os.getloadavg()[0])
            row["cpu_ratio"] = row["spark"]["cpu_s"] / row["arrow"]["cpu_s"]  # report
            results.append(row)
    print(f"groups stage, Spark ({args.master}) against Arrow, {args.rows} rows, second run of each child; "
          f"CPU of the process tree")
    print(f"{'case':>6} {'groups':>7} {'arrow cpu':>10} {'arrow wall':>11} {'spark cpu':>10} {'spark wall':>11} "
          f"{'spark/arrow cpu':>16} {'load':>11}")
    for r in results:
        print(f"{r['case']:>6} {r['arrow']['groups']:>7} {r['arrow']['cpu_s']:>10.2f} {r['arrow']['wall_s']:>11.2f} "
              f"{r['spark']['cpu_s']:>10.2f} {r['spark']['wall_s']:>11.2f} {r['cpu_ratio']:>16.2f} "
              f"{r['load'][0]:>5.1f}-{r['load'][1]:<5.1f}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": args.rows, "master": args.master, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
