#!/usr/bin/env python3
"""Spark timing of the Gaussian learner (gaussian_learner's passes) with the time of every pass.

Usage: .venv/bin/python scripts/bench/gaussian_spark.py [--rows 10000000] [--dim 100] [--kappa 1000]
       [--master local[2]] [--data PATH]
Generates the data with scripts/gen_gaussian.py if PATH is missing, runs PCE then PME on Spark
(SparkGaussianSource: one-shuffle preparation of int32 row blobs, cached pairs and singles, exact mapInArrow partials summed as decimal(38,0)) at rho = 1/2, and prints the
seconds of the preparation and of each pass, the peak RSS of this driver process and of the local
Spark JVM (VmHWM), and the load average; writes bench-results/gaussian_spark-n<rows>-d<dim>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--kappa", type=int, default=1000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data", default=None)
    ap.add_argument("--driver-memory", default=None, help="the local JVM's heap, e.g. 8g (default: dpspark's)")
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    data = args.data or os.path.join(root, "bench-results", f"gaussian-{args.dim}d-{args.rows}.parquet")
    if not os.path.exists(data):
        os.makedirs(os.path.dirname(data), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(root, "scripts", "gen_gaussian.py"), data, "--rows", str(args.rows),
                        "--dim", str(args.dim), "--kappa", str(args.kappa)], check=True)
    from dpspark.mechanisms.gaussian_model.covariance import PublicBounds
    from dpspark.mechanisms.gaussian_model.mechanism import learn_on, scales_for
    from dpspark.mechanisms.gaussian_model.spark_pairs import SparkGaussianSource
    from dpspark.engine.spark.local import jvm_peak_rss_mib, local_session

    spark = local_session("gaussian-bench", args.master, shuffle_partitions=8, driver_memory=args.driver_memory)
    d = args.dim
    df = spark.read.parquet(data)
    bounds = PublicBounds(d, Fraction(20), Fraction(args.kappa), Fraction(1, 100), args.rows)
    scales = scales_for(d, bounds.radius, bounds.kappa, args.rows)
    b = scales.data_bits
    times: list[tuple[str, float]] = []
    t0 = time.time()
    src = SparkGaussianSource(df, [f"x{j}" for j in range(d)], "uid", b, args.rows, bytes(16), max_terms=args.rows)
    for name in ("single_count", "clipped_moments", "clipped_sums"):
        fn = getattr(src, name)

        def timed(*a, _fn=fn, _name=name):  # type: ignore[no-untyped-def]
            start = time.time()
            out = _fn(*a)
            times.append((_name, time.time() - start))
            print(f"  {_name}: {times[-1][1]:.1f} s", flush=True)
            return out

        setattr(src, name, timed)
    learn_on("gaussian_learner", src, bounds, scales, Fraction(1, 2), seed="bench")
    total = time.time() - t0
    jvm = jvm_peak_rss_mib(spark)
    src.close()
    spark.stop()
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # report
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # report
    print(f"rows={args.rows} d={d} kappa={args.kappa}: {len(times)} passes, total {total:.1f} s "
          f"(first pass includes reading and caching the singles); peak RSS driver {me:.0f} MiB, "
          f"children {kids:.0f} MiB, JVM {jvm or float('nan'):.0f} MiB; loadavg {os.getloadavg()[0]:.1f}")  # report
    res = {"rows": args.rows, "dim": d, "kappa": args.kappa, "master": args.master, "driver_memory": args.driver_memory,
           "passes": [[name, round(sec, 1)] for name, sec in times], "total_seconds": round(total, 1),
           "driver_peak_rss_mib": round(me), "jvm_peak_rss_mib": jvm and round(jvm), "loadavg_end": os.getloadavg()}
    out = os.path.join(root, "bench-results", f"gaussian_spark-n{args.rows}-d{d}.json")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
