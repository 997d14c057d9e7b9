#!/usr/bin/env python3
"""Benchmark of the Spark counting stage and the whole stability release, against pyarrow, in one run.

Usage: .venv/bin/python scripts/bench/spark_counting.py [--rows 10000000] [--keys 1000000]
                                                         [--kind int|string] [--repeats 3] [--release]
Generates (once, cached under bench-results/data/) a Parquet file of ROWS rows with KEYS distinct keys
(Zipf-ish), then measures, in the same process and run:
  * pyarrow: read + group_by(key).aggregate(count)  (single process)
  * Spark local[2]: plain groupBy(key).count().toArrow()
  * Spark local[2]: dpspark's counting stage (encode to universe indexes, count), rows = units
  * with --release: the whole stability release (counting + noise + atomic write), and driver peak RSS
Prints a table of medians and the Spark/pyarrow throughput ratio; writes bench-results/spark_counting.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def make_data(path: Path, rows: int, keys: int, kind: str, seed: int = 5) -> None:
    """Write ROWS rows with about KEYS distinct keys, in 4M-row chunks (benchmark input, not noise)."""
    rng = np.random.default_rng(seed)
    writer = None
    done = 0
    while done < rows:
        m = min(4_000_000, rows - done)
        # half the rows uniform over all keys (so all appear), half skewed toward small ids
        ids = np.concatenate([rng.integers(0, keys, m - m // 2), (rng.pareto(1.2, m // 2) * 10).astype(np.int64) % keys])
        col = pa.array(ids, pa.int64()) if kind == "int" else pa.array(np.char.add("q", ids.astype(str)))
        table = pa.table({"key": col})
        if writer is None:
            writer = pq.ParquetWriter(str(path), table.schema)
        writer.write_table(table, row_group_size=1_000_000)
        done += m
    assert writer is not None
    writer.close()


def timed(fn, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--kind", choices=["int", "string"], default="int")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--release", action="store_true", help="also time the whole stability release")
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "spark_counting.json"))
    args = ap.parse_args()

    data_dir = ROOT / "bench-results" / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"keys-{args.kind}-{args.rows}-{args.keys}.parquet"
    if not path.exists():
        t0 = time.perf_counter()
        make_data(path, args.rows, args.keys, args.kind)
        print(f"generated {path.name} in {time.perf_counter() - t0:.1f}s", flush=True)

    from dpspark.config import parse_config
    from dpspark.rng import SystemRandom
    from dpspark.spark.counts import collect_counts, read_input, sparse_counts
    from dpspark.spark.session import local_session

    universe = {"kind": "int_range", "lo": 0, "hi": 2**62} if args.kind == "int" else {"kind": "string", "max_bytes": 15}
    out_dir = Path(tempfile.mkdtemp(prefix="dpspark-bench-"))
    raw = {
        "input": {"path": str(path)},
        "keys": {"columns": ["key"]},
        "universe": universe,
        "privacy": {"mechanism": "stability", "epsilon": "1", "delta": "1e-9", "max_units": args.rows},
        "output": {"path": str(out_dir / "release")},
    }
    cfg = parse_config(raw, out_dir / "bench.toml")

    rows: list[dict] = []

    def record(name: str, med: float, times: list[float], extra: dict | None = None) -> None:
        row = {"stage": name, "median_s": med, "times_s": times, "rows_per_s": args.rows / med, **(extra or {})}
        rows.append(row)
        print(f"{name:<44}{med:>10.2f}s{args.rows / med / 1e6:>12.2f} M rows/s", flush=True)

    print(f"{'stage':<44}{'median':>11}{'throughput':>21}")
    med, times = timed(lambda: pq.read_table(path).group_by("key").aggregate([("key", "count")]), args.repeats)
    record("pyarrow read + group_by count", med, times)

    t0 = time.perf_counter()
    spark = local_session("dpspark-bench", "local[2]", shuffle_partitions=8, driver_memory="4g")
    print(f"(Spark session start {time.perf_counter() - t0:.1f}s)", flush=True)
    df = spark.read.parquet(str(path))
    med, times = timed(lambda: df.groupBy("key").count().toArrow(), args.repeats)
    record("Spark local[2] groupBy(key).count", med, times)
    med, times = timed(lambda: collect_counts(sparse_counts(read_input(spark, cfg.input), cfg, SystemRandom())), args.repeats)
    record("dpspark counting stage (encode + count)", med, times)
    spark_ratio = rows[0]["median_s"] / rows[2]["median_s"]
    print(f"dpspark counting throughput / pyarrow throughput = {spark_ratio:.2f} (target >= 0.5)")

    if args.release:
        from dpspark.job import run_release

        t0 = time.perf_counter()
        run_release(cfg, spark=spark, progress=lambda m: print("   ", m, flush=True))
        total = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        record("whole stability release (local[2])", total, [total], {"driver_python_peak_rss_mb": rss})
        print(f"driver Python peak RSS {rss:.0f} MB (the JVM is a separate process, -Xmx 4g)")
    spark.stop()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"benchmark": "spark_counting", "rows": args.rows, "keys": args.keys, "kind": args.kind,
                   "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "counting_over_pyarrow_throughput": spark_ratio, "results": rows}, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
