#!/usr/bin/env python3
"""Benchmark of the Spark counting stage and the whole stability release, against pyarrow, in one run.

Usage: .venv/bin/python scripts/bench/spark_counting.py [--rows 10000000] [--keys 1000000]
                     [--kind int|string] [--repeats 3] [--release] [--profile] [--driver-memory 3g]
Generates (once, cached under bench-results/data/) a Parquet file of ROWS rows with KEYS distinct keys
(Zipf-ish), then measures, in the same process and run, on that same file:
  * pyarrow: read + group_by(key).aggregate(count)  (one process; Arrow's thread pool)
  * Spark local[2], dpspark's session defaults (dpspark.engine.spark.local.local_session):
      - scan only (Parquet read into a no-op sink): the floor under any Spark aggregation
      - plain groupBy(key).count().toArrow(), with Spark's stock settings for the runtime SQL
        knobs dpspark changes (fast hash map 2^16 keys, 128 MB splits), then with dpspark's
      - dpspark's counting stage (encode to universe indexes, count, collect as Arrow), rows = units:
        before (Spark's own group-by: ``preaggregate=False``) and after (issue 24 §3: each partition
        counted by Arrow's hash aggregation inside mapInArrow, Spark merging the partial counts); the
        two give identical counts (checked)
  * pyarrow single-threaded (read + group_by, use_threads=False): the per-core reference
  * with --release: the whole stability release (counting + noise + atomic write), once
Every measured stage runs once first as an unrecorded warm-up (JIT, page cache, Python imports);
the table shows the median of the next REPEATS runs. Also printed: the Spark/pyarrow throughput
ratios, the load average before and after (the machine may be shared: compare ratios, not times),
the peak RSS of the driver's Python process and of its JVM (VmHWM of the java child process; in
local mode that JVM runs every task), and with --profile per-stage task CPU/run/GC times of the
last dpspark counting run from the Spark status REST API (turns the UI on for this run only).
Writes bench-results/spark_counting.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: Spark's stock values of the runtime SQL settings that dpspark's local session changes.
SPARK_STOCK = {"spark.sql.codegen.aggregate.fastHashMap.capacityBit": "16", "spark.sql.files.maxPartitionBytes": "128m"}


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


def timed(fn, repeats: int) -> tuple[float, list[float], float]:
    """(median of REPEATS timed runs, their times, the excluded warm-up run's time)."""
    t0 = time.perf_counter()
    fn()
    warm = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, warm


def java_children() -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(os.getpid()), "java"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def status_kb(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def stage_profile(spark, since_stage: int) -> list[dict]:
    """Per-stage task metrics (status REST API of the driver UI) for stages with id >= since_stage."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete"
    stages = json.load(urllib.request.urlopen(url, timeout=30))
    out = []
    for s in sorted(stages, key=lambda s: s["stageId"]):
        if s["stageId"] < since_stage:
            continue
        out.append({"stage": s["stageId"], "tasks": s["numTasks"], "run_s": s["executorRunTime"] / 1000,
                    "cpu_s": s["executorCpuTime"] / 1e9, "gc_s": s.get("jvmGcTime", 0) / 1000,
                    "input_rows": s["inputRecords"], "shuffle_read_rows": s["shuffleReadRecords"],
                    "shuffle_write_rows": s["shuffleWriteRecords"], "spill_bytes": s["memoryBytesSpilled"]})
    return out


def last_stage_id(spark) -> int:
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages"
    return max((s["stageId"] for s in json.load(urllib.request.urlopen(url, timeout=30))), default=-1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--kind", choices=["int", "string"], default="int")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per stage, after one warm-up run")
    ap.add_argument("--release", action="store_true", help="also time the whole stability release")
    ap.add_argument("--profile", action="store_true", help="per-stage task metrics via the Spark UI's REST API")
    ap.add_argument("--driver-memory", default=None, help="driver JVM heap (default: dpspark's local_session default)")
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "spark_counting.json"))
    args = ap.parse_args()

    data_dir = ROOT / "bench-results" / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"keys-{args.kind}-{args.rows}-{args.keys}.parquet"
    if not path.exists():
        t0 = time.perf_counter()
        make_data(path, args.rows, args.keys, args.kind)
        print(f"generated {path.name} in {time.perf_counter() - t0:.1f}s", flush=True)

    from dpspark.api.config import parse_config
    from dpspark.rng import SystemRandom
    from dpspark.engine.stages import CountsStage
    from dpspark.engine.spark.counts import collect_counts, read_input, sparse_counts
    from dpspark.engine.spark.local import DEFAULT_CONF, DEFAULT_DRIVER_MEMORY, local_session

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
    load_start = load()
    print(f"{args.rows} rows, {args.keys} keys ({args.kind}), {path.stat().st_size / 1e6:.0f} MB Parquet; "
          f"{os.cpu_count()} CPUs; load average {load_start}")
    print(f"each stage: 1 warm-up run (excluded), then median of {args.repeats}")

    def record(name: str, med: float, times: list[float], warm: float | None, extra: dict | None = None) -> None:
        row = {"stage": name, "median_s": med, "times_s": times, "warmup_s": warm, "rows_per_s": args.rows / med,
               **(extra or {})}
        rows.append(row)
        ratio = f"{rows[0]['median_s'] / med:>8.3f}" if rows else ""
        print(f"{name:<52}{med:>9.2f}s{args.rows / med / 1e6:>10.2f} M rows/s{ratio}", flush=True)

    print(f"{'stage':<52}{'median':>10}{'throughput':>19}{'÷pyarrow':>9}")
    med, times, warm = timed(lambda: pq.read_table(path).group_by("key").aggregate([("key", "count")]), args.repeats)
    record("pyarrow read + group_by count", med, times, warm)
    one = timed(lambda: pq.read_table(path, use_threads=False).group_by("key", use_threads=False)
                .aggregate([("key", "count")]), args.repeats)
    pyarrow_one_thread_s = one[0]
    print(f"{'(pyarrow, one thread: per-core reference)':<52}{one[0]:>9.2f}s{args.rows / one[0] / 1e6:>10.2f} M rows/s",
          flush=True)

    t0 = time.perf_counter()
    spark = local_session("dpspark-bench", "local[2]", shuffle_partitions=8, driver_memory=args.driver_memory,
                          ui=args.profile)
    print(f"(Spark session start {time.perf_counter() - t0:.1f}s; driver heap "
          f"{spark.sparkContext.getConf().get('spark.driver.memory', DEFAULT_DRIVER_MEMORY)})", flush=True)

    def scan_only():
        spark.read.parquet(str(path)).write.format("noop").mode("overwrite").save()

    def plain_groupby():
        spark.read.parquet(str(path)).groupBy("key").count().toArrow()

    med, times, warm = timed(scan_only, args.repeats)
    record("Spark scan only (Parquet -> noop sink)", med, times, warm)
    for key, value in SPARK_STOCK.items():
        spark.conf.set(key, value)
    med, times, warm = timed(plain_groupby, args.repeats)
    record("Spark groupBy(key).count, Spark stock settings", med, times, warm, {"conf": dict(SPARK_STOCK)})
    for key in SPARK_STOCK:
        spark.conf.set(key, DEFAULT_CONF[key])
    med, times, warm = timed(plain_groupby, args.repeats)
    record("Spark groupBy(key).count, dpspark settings", med, times, warm)
    plain_ratio = rows[0]["median_s"] / med
    def counting(preaggregate: bool):  # type: ignore[no-untyped-def]
        return lambda: collect_counts(sparse_counts(read_input(spark, cfg.input), CountsStage.from_spec(cfg),
                                                    SystemRandom(), preaggregate=preaggregate))

    before = counting(False)()
    med, times, warm = timed(counting(False), args.repeats)
    record("dpspark counting stage, before (Spark group-by)", med, times, warm)
    before_ratio = rows[0]["median_s"] / med
    first = last_stage_id(spark) + 1 if args.profile else 0
    after = counting(True)()
    identical = before.sort_by("__dp_index").equals(after.sort_by("__dp_index"))
    med, times, warm = timed(counting(True), args.repeats)
    record("dpspark counting stage, after (Arrow partial counts)", med, times, warm)
    counting_ratio = rows[0]["median_s"] / med
    per_core_ratio = (args.rows / med / 2) / (args.rows / pyarrow_one_thread_s)  # Spark uses 2 cores
    profile = []
    if args.profile:
        # the last counting run's stages only
        stages = stage_profile(spark, first)
        n = len(stages) // (args.repeats + 2)  # the check run, the warm-up and the timed runs
        profile = stages[-n:] if n else stages
        print("profile of the last counting run (task times summed over tasks; 2 cores):")
        print(f"  {'stage':>5}{'tasks':>6}{'run s':>8}{'cpu s':>8}{'gc s':>7}{'in rows':>12}{'shuf rd':>10}{'shuf wr':>10}")
        for s in profile:
            print(f"  {s['stage']:>5}{s['tasks']:>6}{s['run_s']:>8.2f}{s['cpu_s']:>8.2f}{s['gc_s']:>7.2f}"
                  f"{s['input_rows']:>12}{s['shuffle_read_rows']:>10}{s['shuffle_write_rows']:>10}")

    print(f"Spark/pyarrow throughput (both on the same 2 cores): plain groupBy {plain_ratio:.3f}, dpspark counting "
          f"stage before {before_ratio:.3f}, after {counting_ratio:.3f} (target >= 0.5); per core against one-thread "
          f"pyarrow: {per_core_ratio:.3f}; counts identical before/after: {identical}")

    memory = {}
    if args.release:
        from dpspark.engine.runner import run_release

        t0 = time.perf_counter()
        run_release(cfg, spark=spark, progress=lambda m: print(f"    [{time.perf_counter() - t0:7.1f}s] {m}", flush=True))
        total = time.perf_counter() - t0
        record("whole stability release (local[2], 1 run)", total, [total], None)
    py_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    jvms = java_children()
    jvm_peak = sum(status_kb(p, "VmHWM") or 0 for p in jvms) / 1024
    memory = {"driver_python_peak_rss_mb": py_peak, "driver_jvm_peak_rss_mb": jvm_peak,
              "driver_total_peak_rss_mb_upper_bound": py_peak + jvm_peak}
    print(f"driver peak RSS: Python {py_peak:.0f} MB + JVM {jvm_peak:.0f} MB (VmHWM of pid {jvms}) "
          f"= {py_peak + jvm_peak:.0f} MB at most (peaks may not coincide)")
    load_end = load()
    print(f"load average: start {load_start}, end {load_end}")
    spark.stop()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"benchmark": "spark_counting", "rows": args.rows, "keys": args.keys, "kind": args.kind,
                   "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "repeats": args.repeats, "warmup_runs_excluded": 1,
                   "load_average_start": load_start, "load_average_end": load_end,
                   "plain_groupby_over_pyarrow_throughput": plain_ratio,
                   "counting_before_over_pyarrow_throughput": before_ratio,
                   "counting_over_pyarrow_throughput": counting_ratio,
                   "counting_per_core_over_one_thread_pyarrow": per_core_ratio,
                   "pyarrow_one_thread_s": pyarrow_one_thread_s, "counts_identical_before_after": identical,
                   "memory": memory,
                   "profile_last_counting_run": profile, "results": rows}, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
