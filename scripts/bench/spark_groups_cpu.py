#!/usr/bin/env python3
"""CPU of one groups stage on Spark against the Arrow engine, on the same 10^7-row file (issue 35 §2).

Usage: .venv/bin/python scripts/bench/spark_groups_cpu.py [--rows 10000000] [--cases rows,units] [--repeat 3]
       [--base /path/to/another/checkout] [--master local[2]] [--out bench-results/spark_groups_cpu.json]

The file is scripts/bench/groups_pass.py's (three string key columns, 852 public keys; ``rows``: every row a
unit; ``units``: the user_id unit column with k = 2, c = 3). Each engine runs in its own child process, which
computes the stage once untimed (warm: imports, JIT and Python workers; the JVM start is outside) and then
``--repeat`` timed times; figures are medians. CPU is the whole process tree's (the child, its JVM and the Python
workers: utime + stime + the reaped children's, from /proc, at the start and the end of each timed run).
``--base``: a second source tree (e.g. an export of main) whose Spark engine is timed in the same run, case by
case right after this tree's (before/after at the same load). The pyarrow figure is ``pq.read_table`` +
``group_by(keys).aggregate(count, sum)`` on the same file (groups_pass.time_pyarrow, its CPU over all threads):
"Spark counting per core vs pyarrow" is pyarrow CPU / Spark CPU. Prints a table and the load; writes JSON.
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
#: the dpspark source tree a child imports (``--base`` sets it to the other tree)
sys.path.insert(0, os.environ.get("DPSPARK_BENCH_ROOT") or ROOT)
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


def child(engine: str, kind: str, path: str, master: str, repeat: int) -> dict:
    import groups_pass

    sys.path.insert(0, os.environ.get("DPSPARK_BENCH_ROOT") or ROOT)  # groups_pass put this tree first

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
    cpus, walls, groups = [], [], 0
    for _ in range(repeat):
        c0, t0 = tree_cpu(os.getpid()), time.perf_counter()
        groups = once()
        cpus.append(tree_cpu(os.getpid()) - c0)
        walls.append(time.perf_counter() - t0)
    import dpspark

    return {"cpu_s": groups_pass.median(cpus), "wall_s": groups_pass.median(walls), "cpus": cpus, "walls": walls,
            "groups": groups, "dpspark": dpspark.__file__}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--cases", default="rows,units")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--base", default=None, help="another source tree whose Spark engine is timed too (before)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="bench-results/spark_groups_cpu.json")
    args = ap.parse_args()
    if args.child:
        engine, kind, path, master, repeat = args.child
        print("__RESULT__ " + json.dumps(child(engine, kind, path, master, int(repeat))), flush=True)
        return 0
    import groups_pass

    trees = [("arrow", ROOT), ("spark", ROOT)] + ([("spark_base", os.path.abspath(args.base))] if args.base else [])
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "public.parquet")
        groups_pass.workload(path, args.rows, args.users, "public")
        for kind in args.cases.split(","):
            row: dict = {"case": kind, "load": [os.getloadavg()[0]]}
            row["pyarrow"] = groups_pass.time_pyarrow(kind, path, args.repeat)
            row["pyarrow"]["cpu_s"] = groups_pass.median(row["pyarrow"]["cpus"])
            for name, root in trees:
                env = dict(os.environ, PYTHONPATH=root, DPSPARK_BENCH_ROOT=root)  # the Python workers import it too
                env.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
                env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
                env.setdefault("PYSPARK_PYTHON", sys.executable)
                cmd = [sys.executable, __file__, "--child", name.split("_")[0], kind, path, args.master, str(args.repeat)]
                # cwd: Spark's Python workers (python -m pyspark.daemon) put their cwd first on sys.path
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root)
                line = [x for x in p.stdout.splitlines() if x.startswith("__RESULT__ ")]
                if not line:
                    sys.stderr.write(p.stderr[-3000:])
                    return 1
                row[name] = json.loads(line[0][len("__RESULT__ "):])
            row["load"].append(os.getloadavg()[0])
            row["cpu_ratio"] = row["spark"]["cpu_s"] / row["arrow"]["cpu_s"]  # report
            row["pyarrow_per_spark"] = row["pyarrow"]["cpu_s"] / row["spark"]["cpu_s"]  # report
            results.append(row)
    print(f"groups stage, Spark ({args.master}) against Arrow, {args.rows} rows, median of {args.repeat} warm runs "
          f"per child; CPU s of the process tree")
    head = f"{'case':>6} {'groups':>7} {'pyarrow':>8} {'arrow':>7} {'spark':>7} {'spark wall':>11} {'spark/arrow':>12} " \
           f"{'pyarrow/spark':>14}"
    print(head + (f" {'base spark':>11} {'base/new':>9}" if args.base else "") + f" {'load':>11}")
    for r in results:
        line = (f"{r['case']:>6} {r['arrow']['groups']:>7} {r['pyarrow']['cpu_s']:>8.2f} {r['arrow']['cpu_s']:>7.2f} "
                f"{r['spark']['cpu_s']:>7.2f} {r['spark']['wall_s']:>11.2f} {r['cpu_ratio']:>12.2f} "
                f"{r['pyarrow_per_spark']:>14.3f}")  # report
        if args.base:
            line += f" {r['spark_base']['cpu_s']:>11.2f} {r['spark_base']['cpu_s'] / r['spark']['cpu_s']:>9.2f}"  # report
        print(line + f" {r['load'][0]:>5.1f}-{r['load'][1]:<5.1f}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": args.rows, "master": args.master, "repeat": args.repeat, "base": args.base,
                   "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
