#!/usr/bin/env python3
"""Time one product_learner run on Spark (local[2]): time per pass, at d columns and n rows.

Usage: .venv/bin/python scripts/bench/product_spark.py [--rows 1000000] [--cols 1000] [--array] [--data PATH]
The data (scripts/gen_product.py biases, one row per unit) is generated if missing. The run is the
mechanism's own path - SparkBackend, SparkRounds (pack, per-unit OR, keyed-hash batches, one mapInArrow
pass per round) and run_learner - with the plan built at alpha = 1/10 without the n check (timing only).
Preparation (reading, packing, the per-unit shuffle, keyed batches, the cache) is timed apart from the
round passes; a release does it inside pass 1. Also writes the JSON to bench-results/product_spark.json.
Measured at 10^6 rows, d = 1000, local[2]: pass 1 = 210 s (load ~5) with the JVM packing, against 546 s
(load 6-9) when the 1000 columns went through Arrow to Python; passes 2-9 take about 2 s each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=1000)
    ap.add_argument("--data", default=None)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--array", action="store_true", help="the d bits as one array column (gen_product.py --array f)")
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    data = args.data or os.path.join(root, "demo-output", f"product-n{args.rows}-d{args.cols}{'-array' if args.array else ''}.parquet")
    if not os.path.exists(data):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, os.path.join(root, "scripts", "gen_product.py"), data, "--rows",
                        str(args.rows), "--cols", str(args.cols)] + (["--array", "f"] if args.array else []), check=True, stdout=subprocess.DEVNULL)
        print(f"generated {data} in {time.perf_counter() - t0:.1f} s", flush=True)
    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.product.learner import LearnerPlan, run_learner
    from dpspark.rng import SystemRandom
    from dpspark.mechanisms.product.spark_rounds import SparkRounds
    from dpspark.mechanisms.product.stage import ProductRoundsStage
    from dpspark.engine.spark.local import jvm_peak_rss_mib, local_session

    spark = local_session("product-bench", args.master, shuffle_partitions=4)
    df = spark.read.parquet(data)
    rng = SystemRandom()
    plan = LearnerPlan.build(args.cols, args.rows, Fraction(1, 2), Fraction(1, 10), Fraction(1, 10), enforce=False)
    backend = SparkBackend(df, rng)  # the input is read once: the rounds read the prepared units
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    names = [f"f[{j}]" for j in range(args.cols)] if args.array else [f"x{j:02d}" for j in range(args.cols)]
    oracle = SparkRounds(backend, ProductRoundsStage(tuple(names), "id", plan.batches, "f" if args.array else None))
    # materialise the cached units first, so the profile splits preparation (read, pack, per-unit OR,
    # keyed batches, cache write) from the first round's own pass; the release does both in pass 1
    t_prep = time.perf_counter()
    units = oracle.prepared.count()
    prep = time.perf_counter() - t_prep
    print(f"preparation: {prep:.1f} s ({units} units cached)", flush=True)
    run = run_learner(plan, oracle, rng)
    total = time.perf_counter() - t0
    jvm_peak = jvm_peak_rss_mib(spark)
    oracle.close()
    spark.stop()
    res = {"rows": args.rows, "cols": args.cols, "input": "array" if args.array else "columns", "master": args.master, "passes": len(oracle.timings),
           "preparation_seconds": round(prep, 1), "seconds_per_pass": [round(t, 2) for t in oracle.timings],
           "total_seconds": round(total, 1),
           "coordinates_per_round": [r["coordinates"] for r in run.rounds],
           "jvm_peak_rss_mib": jvm_peak, "load_before": load0, "load_after": os.getloadavg()}
    print(json.dumps(res, indent=1))
    out = os.path.join(root, "bench-results", f"product_spark-n{args.rows}-d{args.cols}{'-array' if args.array else ''}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
