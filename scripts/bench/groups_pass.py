#!/usr/bin/env python3
"""The groups data pass on Arrow against a plain pyarrow group-by on the same file (issue 35 §2).

Usage: .venv/bin/python scripts/bench/groups_pass.py [--rows 10000000] [--users 1000000] [--repeat 3]
       [--cases rows,units,private,public-1e6,cli-private,cli-public-1e6] [--out bench-results/groups_pass.json]

Workloads (synthetic; numpy's seeded Generator makes input data only, never noise), each written once to a
Parquet file; dpspark computes count + sum per key (``backend.compute(GroupsStage)`` on the file: read,
bound, sum) in a child process, the same child computing it ``--repeat`` times:

* ``rows``: ``--rows`` rows, three string key columns (4 x 3 x 71 = 852 public keys), one float value column
  with two decimals; every row a unit (issue 35 §2's workload);
* ``units``: the same file with the ``user_id`` unit column (``--users`` users), k = 2 groups and c = 3 rows
  per group per unit (the per-unit rules run on every row);
* ``private``: ``--rows`` rows over 10^6 int64 keys (an int_range universe: private keys), rows as units;
* ``private-units``: the same with units of 10 rows, k = 2, c = 3;
* ``public-1e6``: the ``private`` file with a public list of the 10^6 keys (the universe is built in the child,
  outside the timed pass);
* ``cli-private`` and ``cli-public-1e6`` (issue 35 §2's scale goals, whole releases): ``/usr/bin/time -v dpspark
  release --engine arrow`` on the ``private`` file, keys selected privately from the int_range 0..10^6 - 1, or the
  10^6 public keys from a Parquet keys file; count + sum per key, rows as units. Figures: wall, CPU (user + sys)
  and peak RSS of the CLI process (start-up, planning, noise and the release's writing included); no pyarrow
  baseline (the goals are absolute: <= 15 s and <= 1.5 GiB, <= 10 s).

The baseline is ``pq.read_table`` + ``group_by(keys).aggregate([(value, sum), (value, count)])`` on the same
file in this process. Figures are medians of CPU seconds (every thread of the process) and wall seconds; the
CPU ratio dpspark / pyarrow is the data-pass goal's figure (<= 1.5); the peak RSS is the child's ru_maxrss
(the universe and the Python runtime included). Prints a table and the load before and after; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)


def workload(path: str, rows: int, users: int, kind: str, seed: int = 7) -> None:
    """Write the case's input Parquet."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)  # synthetic input only
    cols: dict = {"user_id": pa.array(rng.integers(0, users, rows), pa.int64())}
    if kind == "public":
        a = np.array(["north", "south", "east", "west"])
        b = np.array(["retail", "online", "phone"])
        c = np.array([f"product-{i:03d}" for i in range(71)])
        cols["k1"] = pa.array(a[rng.integers(0, len(a), rows)])
        cols["k2"] = pa.array(b[rng.integers(0, len(b), rows)])
        cols["k3"] = pa.array(c[rng.integers(0, len(c), rows)])
    else:
        cols["user_id"] = pa.array(np.arange(rows, dtype=np.int64) // 10)
        cols["key"] = pa.array(rng.integers(0, 1_000_000, rows), pa.int64())
    cols["value"] = pa.array(np.round(rng.gamma(2.0, 50.0, rows), 2))
    pq.write_table(pa.table(cols), path, row_group_size=1 << 20)


CASES = ("rows", "units", "private", "private-units", "public-1e6", "cli-private", "cli-public-1e6")

CLI_CONFIG = """[input]
path = "{data}"
[privacy]
mechanism = "groups"
epsilon = "1"
delta = "1e-8"
[groups]
by = ["key"]
{keys}
[[aggregates]]
name = "n"
kind = "count"
[[aggregates]]
name = "s"
kind = "sum"
column = "value"
lo = "0"
hi = "1000"
[output]
path = "{out}"
"""


def time_cli(kind: str, path: str, tmp: str, repeat: int) -> dict:
    """Whole ``dpspark release --engine arrow`` runs under ``/usr/bin/time -v`` (a fresh ledger each)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if kind == "cli-public-1e6":
        keys_path = os.path.join(tmp, "keys.parquet")
        pq.write_table(pa.table({"key": pa.array(range(1_000_000), pa.int64())}), keys_path)
        keys = f'keys_file = "{keys_path}"'
    else:
        keys = '[universe]\nkind = "int_range"\nlo = 0\nhi = 999999'
    walls, cpus, rss = [], [], []
    for i in range(repeat):
        run = os.path.join(tmp, f"{kind}-{i}")
        os.makedirs(run)
        config = os.path.join(run, "release.toml")
        with open(config, "w") as f:
            f.write(CLI_CONFIG.format(data=path, keys=keys, out=os.path.join(run, "release")))
        env = dict(os.environ, PYTHONPATH=ROOT, DPSPARK_LEDGER=os.path.join(run, "ledger"))
        cli = os.path.join(os.path.dirname(sys.executable), "dpspark")
        p = subprocess.run(["/usr/bin/time", "-v", cli, "release", "--engine", "arrow", "--config", config],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise SystemExit(f"dpspark release failed:\n{p.stderr[-3000:]}")
        stats = dict(line.strip().rsplit(": ", 1) for line in p.stderr.splitlines() if ": " in line)
        wall = stats["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
        walls.append(sum(float(x) * 60 ** j for j, x in enumerate(reversed(wall))))  # report
        cpus.append(float(stats["User time (seconds)"]) + float(stats["System time (seconds)"]))  # report
        rss.append(int(stats["Maximum resident set size (kbytes)"]) / 1024)  # report
    return {"walls": walls, "cpus": cpus, "maxrss_mib": max(rss)}


def stage_of(kind: str, path: str):
    """The GroupsStage of a case: count + sum per key; units (where named) with k = 2 groups, c = 3 rows."""
    from dpspark.mechanisms.groups.aggregates import parse_aggregates
    from dpspark.mechanisms.groups.mechanism import public_key_universe
    from dpspark.mechanisms.groups.stage import GroupsStage
    from dpspark.universe import IntRangeUniverse

    aggs = parse_aggregates([{"name": "n", "kind": "count"},
                             {"name": "s", "kind": "sum", "column": "value", "lo": "0", "hi": "1000"}])
    if kind in ("rows", "units"):
        rows = tuple((a, b, f"product-{i:03d}") for a in ("north", "south", "east", "west")
                     for b in ("retail", "online", "phone") for i in range(71))
        uni = public_key_universe(("k1", "k2", "k3"), rows)
        return GroupsStage(("k1", "k2", "k3"), uni, "user_id" if kind == "units" else None, 10**8, 2, 3, aggs,
                           count_units=True)
    if kind == "public-1e6":
        uni = public_key_universe(("key",), tuple((i,) for i in range(1_000_000)))
        return GroupsStage(("key",), uni, None, 10**8, 2, 3, aggs)
    return GroupsStage(("key",), IntRangeUniverse(0, 1_000_000 - 1, "key"),
                       "user_id" if kind == "private-units" else None, 10**8, 2, 3, aggs, count_units=True)


def time_dpspark(kind: str, path: str, repeat: int) -> dict:
    from dpspark.engine.backend import open_backend
    from dpspark.rng import SystemRandom

    t_plan = time.process_time()
    stage = stage_of(kind, path)
    stage_cpu = time.process_time() - t_plan
    walls, cpus, groups = [], [], 0
    for _ in range(repeat):
        with open_backend("arrow", rng=SystemRandom(), source=path) as backend:
            t0, c0 = time.perf_counter(), time.process_time()
            out = backend.compute(stage)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            groups = len(out)
    return {"walls": walls, "cpus": cpus, "groups": groups, "stage_cpu": stage_cpu,
            "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def time_pyarrow(kind: str, path: str, repeat: int) -> dict:
    import pyarrow.parquet as pq

    keys = ["k1", "k2", "k3"] if kind in ("rows", "units") else ["key"]
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        t = pq.read_table(path, columns=keys + ["value"])
        g = t.group_by(keys).aggregate([("value", "sum"), ("value", "count")])
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        del t, g
    return {"walls": walls, "cpus": cpus}


def median(xs: list) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="rows,units,private,public-1e6", help=f"comma-separated, of {CASES}")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "PATH", "REPEAT"), help=argparse.SUPPRESS)
    ap.add_argument("--out", default="bench-results/groups_pass.json")
    args = ap.parse_args()
    if args.child:
        kind, path, repeat = args.child
        print("__RESULT__ " + json.dumps(time_dpspark(kind, path, int(repeat))), flush=True)
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.cases.split(","):
            data = "public" if kind in ("rows", "units") else "private"
            path = os.path.join(tmp, f"{data}.parquet")
            if not os.path.exists(path):
                workload(path, args.rows, args.users, data)
            load0 = os.getloadavg()[0]
            if kind.startswith("cli-"):
                d = time_cli(kind, path, tmp, args.repeat)
                results.append({"case": kind, "rows": args.rows, "groups": -1, "dpspark_cpu_s": median(d["cpus"]),
                                "dpspark_wall_s": median(d["walls"]), "dpspark_peak_rss_mib": d["maxrss_mib"],
                                "stage_cpu_s": 0.0, "pyarrow_cpu_s": float("nan"), "pyarrow_wall_s": float("nan"),  # report
                                "cpu_ratio": float("nan"), "load": [load0, os.getloadavg()[0]], "raw": {"dpspark": d}})  # report
                continue
            env = dict(os.environ, PYTHONPATH=ROOT)
            p = subprocess.run([sys.executable, __file__, "--child", kind, path, str(args.repeat)],
                               capture_output=True, text=True, env=env)
            line = [x for x in p.stdout.splitlines() if x.startswith("__RESULT__ ")]
            if not line:
                sys.stderr.write(p.stderr)
                return 1
            d = json.loads(line[0][len("__RESULT__ "):])
            pa_ = time_pyarrow(kind, path, args.repeat)
            load1 = os.getloadavg()[0]
            r = {"case": kind, "rows": args.rows, "groups": d["groups"],
                 "dpspark_cpu_s": median(d["cpus"]), "dpspark_wall_s": median(d["walls"]),
                 "dpspark_peak_rss_mib": d["maxrss_mib"], "stage_cpu_s": d["stage_cpu"],
                 "pyarrow_cpu_s": median(pa_["cpus"]), "pyarrow_wall_s": median(pa_["walls"]),
                 "load": [load0, load1], "raw": {"dpspark": d, "pyarrow": pa_}}
            r["cpu_ratio"] = r["dpspark_cpu_s"] / r["pyarrow_cpu_s"]  # report
            results.append(r)
    print(f"groups data pass on Arrow vs pyarrow read_table + group_by; {args.rows} rows; cpus {os.cpu_count()}; "
          f"medians of {args.repeat}")
    print(f"{'case':>12} {'groups':>8} {'dp cpu s':>9} {'dp wall s':>10} {'peak MiB':>9} {'pa cpu s':>9} "
          f"{'pa wall s':>10} {'cpu ratio':>10} {'load':>11}")
    for r in results:
        print(f"{r['case']:>12} {r['groups']:>8} {r['dpspark_cpu_s']:>9.2f} {r['dpspark_wall_s']:>10.2f} "
              f"{r['dpspark_peak_rss_mib']:>9.0f} {r['pyarrow_cpu_s']:>9.2f} {r['pyarrow_wall_s']:>10.2f} "
              f"{r['cpu_ratio']:>10.2f} {r['load'][0]:>5.1f}-{r['load'][1]:<5.1f}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": args.rows, "users": args.users, "cpus": os.cpu_count(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
