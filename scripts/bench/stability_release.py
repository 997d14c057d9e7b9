#!/usr/bin/env python3
"""Benchmark: a whole stability release (count stage + noise + write), in-process, on both engines.

Usage: python scripts/bench/stability_release.py [--rows 100000000] [--keys 1000000] [--runs 2] [--out FILE]
Makes (once) a Parquet file with scripts/gen_peer_workload.py, then runs the release ``--runs`` times per engine:
Spark local[2] with the session started before the first run, and the Arrow engine. Prints a table (the last
run's wall seconds, the count stage, the noise + write step) with the load average, and writes JSON.
Timings are floats for reporting only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "stability_release.json"))
    args = ap.parse_args()
    data = ROOT / "bench-results" / "data" / f"peer-{args.rows}-{args.keys}.parquet"
    if not data.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_peer_workload.py"), str(data), "--rows",
                        str(args.rows), "--keys", str(args.keys)], check=True)
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.runner import run_release

    raw = {"input": {"path": str(data)}, "keys": {"columns": ["key"]},
           "universe": {"kind": "int_range", "lo": 0, "hi": 2**62},
           "privacy": {"mechanism": "stability", "epsilon": "1", "delta": "1e-9", "max_units": args.rows}}
    results = []
    for engine in ("spark", "arrow"):
        spark = None
        if engine == "spark":
            from dpspark.engine.spark.local import local_session

            spark = local_session("bench-stability", "local[2]")
        for run in range(1, args.runs + 1):
            out = Path(tempfile.mkdtemp(prefix="dpspark-bench-")) / "release"
            spec = ReleaseSpec.from_dict({**raw, "output": {"path": str(out)}}, base_dir=ROOT)
            t0 = time.perf_counter()
            marks: dict[str, float] = {}

            def progress(msg: str, t0: float = t0, marks: dict[str, float] = marks) -> None:
                if "collected" in msg:  # the count stage's aggregates are on the driver
                    marks.setdefault("counts", time.perf_counter() - t0)  # report

            run_release(spec, spark=spark, engine=engine, progress=progress)
            wall = time.perf_counter() - t0  # report
            counted = marks.get("counts", float("nan"))
            results.append({"engine": engine, "run": run, "wall_s": wall, "count_stage_s": counted,
                            "noise_and_write_s": wall - counted, "load": os.getloadavg()[0]})
    print(f"stability release, {args.rows} rows, {args.keys} keys (local[2] for Spark; last run of each engine)")
    print(f"{'engine':8s} {'wall s':>8s} {'count s':>8s} {'noise+write s':>14s} {'load':>6s}")
    for r in results:
        if r["run"] == args.runs:
            print(f"{r['engine']:8s} {r['wall_s']:8.2f} {r['count_stage_s']:8.2f} {r['noise_and_write_s']:14.2f} {r['load']:6.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": args.rows, "keys": args.keys, "results": results}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
