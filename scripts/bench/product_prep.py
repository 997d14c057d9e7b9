#!/usr/bin/env python3
"""Where product_learner's Spark preparation spends its time at large d: scan, packing, named vs array input.

Usage: .venv/bin/python scripts/bench/product_prep.py [--rows 200000] [--cols 1000] [--repeats 3]
Generates the same bits twice (scripts/gen_product.py: d named columns, and --array f), then times, on
local[2] in one warm session, the median of --repeats runs (the first run of each step pays the JVM's
warm-up) of:
  pyarrow read   pq.read_table of the named file (the floor: the bytes themselves);
  scan 100       Spark, a no-op write of 100 of the named columns;
  scan all       Spark, a no-op write of all d named columns;
  pack named     Spark, the packed words of d named columns (product_rounds.prepare's SQL packing), no-op;
  pack array     Spark, the packed words of one array column (mapInArrow + numpy), no-op;
  pack get()     Spark, the same words from d SQL get(array, j) expressions (the rejected design), no-op;
  prepare named / prepare array  product_rounds.prepare (pack, per-unit OR, keyed batches) counted.
Prints a table and writes bench-results/product_prep-n<rows>-d<cols>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))


def _counted(prepared) -> int:  # type: ignore[no-untyped-def]
    """Count a prepared (persisted) frame, then drop it: a repeat must not read the previous run's cache."""
    try:
        return prepared.count()
    finally:
        prepared.unpersist(blocking=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--cols", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    paths = {}
    for form, extra in (("named", []), ("array", ["--array", "f"])):
        paths[form] = os.path.join(root, "demo-output", f"product-prep-n{args.rows}-d{args.cols}-{form}.parquet")
        if not os.path.exists(paths[form]):
            subprocess.run([sys.executable, os.path.join(root, "scripts", "gen_product.py"), paths[form], "--rows",
                            str(args.rows), "--cols", str(args.cols), *extra], check=True, stdout=subprocess.DEVNULL)
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from dpspark.mechanisms.product import spark_rounds as pr
    from dpspark.mechanisms.samplers.spark_arrays import elements, packed_array
    from dpspark.engine.spark.local import local_session

    spark = local_session("product-prep-bench", "local[2]", shuffle_partitions=4)
    named, arr = spark.read.parquet(paths["named"]), spark.read.parquet(paths["array"])
    cols = [f"x{j:02d}" for j in range(args.cols)]
    types = dict(named.dtypes)

    def noop(frame):  # type: ignore[no-untyped-def]
        return lambda: frame.write.format("noop").mode("overwrite").save()

    cases = {
        "pyarrow read": lambda: pq.read_table(paths["named"]),
        "scan 100": noop(named.select(*cols[:100])),
        "scan all": noop(named.select(*cols)),
        "pack named": noop(named.select(F.col("id"), *pr._sql_words(cols, types))),
        "pack array": noop(packed_array(arr, "f", "id", args.cols)),
        "pack get()": noop(arr.select(F.col("id"), *[e.alias(c) for e, c in zip(elements("f", args.cols), cols)])
                           .select(F.col("id"), *pr._sql_words(cols, {c: "tinyint" for c in cols}))),
        "prepare named": lambda: _counted(pr.prepare(named, cols, "id", 64, bytes(16))),
        "prepare array": lambda: _counted(pr.prepare(arr, cols, "id", 64, bytes(16), "f")),
    }
    load0 = os.getloadavg()
    res: dict[str, list[float]] = {}
    for name, fn in cases.items():
        res[name] = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            res[name].append(round(time.perf_counter() - t0, 2))
    spark.stop()
    print(f"rows={args.rows} d={args.cols} local[2], median of {args.repeats}; load {load0[0]:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'step':<16}{'median s':>10}  runs")
    for name, runs in res.items():
        print(f"{name:<16}{statistics.median(runs):>10.2f}  {runs}")
    out = os.path.join(root, "bench-results", f"product_prep-n{args.rows}-d{args.cols}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"rows": args.rows, "cols": args.cols, "seconds": res, "load_before": load0,
                   "load_after": os.getloadavg()}, fh, indent=1)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
