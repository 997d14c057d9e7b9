#!/usr/bin/env python3
"""The floor under any mapInArrow design of a Spark groups pass (issue 35 §2), on spark_groups_cpu.py's file.

Usage: .venv/bin/python scripts/bench/spark_groups_floor.py [--rows 10000000] [--repeat 3] [--cases a,b]
Cases (CPU s of the process tree, median of ``--repeat`` runs after one warm-up, local[2]):
  scan_noop: the stage's columns (k1, k2, k3, value) read into Spark's no-op sink (the scan alone);
  jvm_groupby: groupBy(k1, k2, k3).agg(count, sum(value)) in the JVM (no Python);
  arrow_floor_strings: the same columns into mapInArrow whose Python function only counts rows (the scan plus the
    row -> Arrow transfer: what each read of the rows-as-units path pays before any work);
  arrow_floor_hash_long: two longs instead (a JVM xxhash64 of the keys, the value): narrow columns;
  arrow_floor_codes_join: int codes of the keys from three broadcast joins with their categories, and the value.
Prints one line a case with the load; the Arrow engine's figure is spark_groups_cpu.py's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(__file__))


def main() -> int:
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    import groups_pass
    from spark_groups_cpu import tree_cpu

    from dpspark.engine.spark.local import local_session

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="scan_noop,jvm_groupby,arrow_floor_strings,arrow_floor_hash_long")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "public.parquet")
    groups_pass.workload(path, args.rows, 1_000_000, "public")
    spark = local_session("bench-groups-floor", "local[2]")
    df = spark.read.parquet(path)
    keys = ["k1", "k2", "k3"]
    cats = {"k1": ["north", "south", "east", "west"], "k2": ["retail", "online", "phone"],
            "k3": [f"product-{i:03d}" for i in range(71)]}

    def count(batches):  # type: ignore[no-untyped-def]
        n = sum(b.num_rows for b in batches)
        yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])

    out = StructType([StructField("n", LongType())])

    def codes():  # type: ignore[no-untyped-def]
        d = df
        for c, vals in cats.items():
            t = spark.createDataFrame([(v, i) for i, v in enumerate(vals)],
                                      StructType([StructField(c, StringType(), False),
                                                  StructField("_c" + c, IntegerType(), False)]))
            d = d.join(F.broadcast(t), on=c, how="left")
        return d.select("_ck1", "_ck2", "_ck3", "value")

    cases = {
        "scan_noop": lambda: df.select(*keys, "value").write.format("noop").mode("overwrite").save(),
        "jvm_groupby": lambda: df.groupBy(*keys).agg(F.count(F.lit(1)), F.sum("value")).collect(),
        "arrow_floor_strings": lambda: df.select(*keys, "value").mapInArrow(count, out).collect(),
        "arrow_floor_hash_long": lambda: df.select(F.xxhash64(*keys).alias("h"), "value").mapInArrow(count, out).collect(),
        "arrow_floor_codes_join": lambda: codes().mapInArrow(count, out).collect(),
    }
    print(f"{args.rows} rows, local[2], CPU s of the process tree, median of {args.repeat} warm runs")
    for name in args.cases.split(","):
        fn = cases[name]
        fn()
        cpus = []
        for _ in range(args.repeat):
            c0 = tree_cpu(os.getpid())
            fn()
            cpus.append(tree_cpu(os.getpid()) - c0)
        print(f"{name:24s} {statistics.median(cpus):7.2f}  load {os.getloadavg()[0]:.1f}", flush=True)  # report
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
