#!/usr/bin/env python3
"""Benchmark of the Spark counting stage and the whole stability release, against pyarrow, in one run.

Usage: .venv/bin/python scripts/bench/spark_counting.py [--rows 10000000] [--keys 1000000]
                     [--kind int|string] [--repeats 3] [--release] [--profile] [--driver-memory 3g]
                     [--quick] [--tree /tmp/sparkhist_base]
Generates (once, cached under bench-results/data/) a Parquet file of ROWS rows with KEYS distinct keys
(Zipf-ish), then measures, in the same process and run, on that same file:
  * pyarrow: read + group_by(key).aggregate(count), with Arrow's thread pool and with one thread
  * Spark local[2], dpspark's session defaults (dpspark.engine.spark.local.local_session):
      - scan only (Parquet read into a no-op sink): the floor under any Spark aggregation
      - scan into mapInArrow with a Python consumer that only counts rows: the floor under any
        Arrow pre-aggregation in the tasks (Spark turns its columnar scan into rows, then rows into Arrow)
      - plain groupBy(key).count().toArrow(), with Spark's stock settings for the runtime SQL
        knobs dpspark changes (fast hash map 2^16 keys, 128 MB splits), then with dpspark's
      - dpspark's counting stage (encode to universe indexes, count, collect as Arrow), rows = units
      - the variant issue 24 §3 suggested (not adopted: see the table): each partition counted by
        Arrow's hash aggregation inside mapInArrow, Spark merging the partial counts, then the same
        encoding and collection; its counts are checked identical to the stage's
Each measured stage runs once first as an unrecorded warm-up (JIT, page cache, Python imports);
the table shows the median of the next REPEATS runs: wall time, and CPU time (this process, its JVM and
the JVM's Python workers, from /proc; on a shared machine the CPU figures are the steadier ones). Ratios:
Spark/pyarrow throughput on the same 2 cores (wall), and per core (CPU seconds per row, Spark against
one-thread pyarrow). Also printed: the load average before and after, the peak RSS of the driver's
Python process and of its JVM (VmHWM of the java child process; in local mode that JVM runs every task),
and with --profile per-stage task CPU/run/GC times of the last dpspark counting run from the Spark status
REST API (turns the UI on for this run only). Writes bench-results/spark_counting.json.
``--quick`` skips the two floors and the variant. ``--tree DIR`` times another source tree's dpspark (e.g. main,
``git -C /work/main archive <commit> | tar -x -C DIR``) on the same cached data: a before/after pair is two runs,
one per tree, back to back; compare their per-core ratios (each run has its own pyarrow reference at its load).
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

#: Spark's stock values of the runtime SQL settings that dpspark's local session changes.
SPARK_STOCK = {"spark.sql.codegen.aggregate.fastHashMap.capacityBit": "16", "spark.sql.files.maxPartitionBytes": "128m",
               "spark.sql.codegen.aggregate.map.vectorized.enable": "false"}


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


TICK = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the JVM and its Python daemon and workers)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
    kids: dict[int, list[int]] = {}
    for p, pp in zip(out[0::2], out[1::2]):
        kids.setdefault(int(pp), []).append(int(p))
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += kids.get(p, [])
    return seen


def cpu_seconds() -> float:
    """CPU time (user + system, reaped children included) of this process and every process below it."""
    total = 0
    for p in process_tree(os.getpid()):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])
    return total / TICK  # report


def timed(fn, repeats: int) -> tuple[float, list[float], float, float]:
    """(median wall time of REPEATS runs, their times, the excluded warm-up run's time, median CPU time)."""
    t0 = time.perf_counter()
    fn()
    warm = time.perf_counter() - t0
    times, cpus = [], []
    for _ in range(repeats):
        c0 = cpu_seconds()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    return statistics.median(times), times, warm, statistics.median(cpus)


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


def arrow_count_fn(cols: list[str]):  # type: ignore[no-untyped-def]
    """mapInArrow: one partition's rows -> (cols..., count) per distinct non-NULL key (one Acero plan)."""

    def count(batches):  # type: ignore[no-untyped-def]
        import pyarrow.acero as ac
        import pyarrow.compute as pc

        it = iter(batches)
        first = next(it, None)
        if first is None:
            return

        def again():  # type: ignore[no-untyped-def]
            yield first
            yield from it

        reader = pa.RecordBatchReader.from_batches(first.schema, again())
        plan = ac.Declaration.from_sequence([
            ac.Declaration("record_batch_reader_source", ac.RecordBatchReaderSourceNodeOptions(reader)),
            ac.Declaration("aggregate", ac.AggregateNodeOptions([([], "hash_count_all", None, "count")], keys=cols)),
        ])
        table = plan.to_table(use_threads=False)  # Spark already runs one task per core
        valid = None
        for c in cols:
            if table.column(c).null_count:
                ok = pc.is_valid(table.column(c))
                valid = ok if valid is None else pc.and_(valid, ok)
        yield from (table if valid is None else table.filter(valid)).combine_chunks().to_batches(max_chunksize=1 << 16)

    return count


def arrow_partial_counting(spark, cfg):  # type: ignore[no-untyped-def]
    """The §3 variant: Arrow partial counts per partition, Spark's merge, then the stage's encoding and collection
    (the stage's own path for a key-preserving universe without a unit column)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    from dpspark.engine.spark.counts import INDEX, MEMBER, collect_counts, read_input
    from dpspark.engine.spark.encode import with_universe_index
    from dpspark.engine.stages import CountsStage

    stage = CountsStage.from_spec(cfg)
    cols = list(stage.key_columns)
    keys = read_input(spark, cfg.input).select(*cols)
    schema = StructType([keys.schema[c] for c in cols] + [StructField("count", LongType(), False)])
    grouped = keys.mapInArrow(arrow_count_fn(cols), schema).groupBy(*cols).agg(F.sum("count").cast("long").alias("count"))
    encoded = with_universe_index(grouped, stage.universe, cols, index_col=INDEX, in_universe_col=MEMBER)
    return collect_counts(encoded.filter(F.col(MEMBER)).select(INDEX, "count"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--kind", choices=["int", "string"], default="int")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per stage, after one warm-up run")
    ap.add_argument("--release", action="store_true", help="also time the whole stability release")
    ap.add_argument("--profile", action="store_true", help="per-stage task metrics via the Spark UI's REST API")
    ap.add_argument("--driver-memory", default=None, help="driver JVM heap (default: dpspark's local_session default)")
    ap.add_argument("--tree", default=str(ROOT), help="the dpspark source tree to time (default: this script's; "
                    "e.g. an export of main for a before/after pair: run once per tree, same data, same load)")
    ap.add_argument("--quick", action="store_true", help="skip the scan and mapInArrow floors and the Arrow-partials "
                    "variant (pyarrow, plain groupBy and dpspark's stage only)")
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "spark_counting.json"))
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.tree))

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
    from dpspark.engine.spark.counts import collect_counts, counts_to_python, read_input, sparse_counts
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

    def record(name: str, result: tuple, extra: dict | None = None) -> None:  # type: ignore[type-arg]
        med, times, warm, cpu = result
        row = {"stage": name, "median_s": med, "times_s": times, "warmup_s": warm, "rows_per_s": args.rows / med,
               "cpu_s": cpu, "cpu_ns_per_row": cpu / args.rows * 1e9, **(extra or {})}  # report
        rows.append(row)
        ratio = f"{rows[0]['median_s'] / med:>9.3f}" if rows else ""
        print(f"{name:<58}{med:>8.2f}s{args.rows / med / 1e6:>8.2f} M/s{ratio}{cpu:>9.2f}s{row['cpu_ns_per_row']:>8.0f}",
              flush=True)

    print(f"{'stage':<58}{'median':>9}{'throughput':>12}{'÷pyarrow':>9}{'cpu':>10}{'ns/row':>8}")
    record("pyarrow read + group_by count", timed(
        lambda: pq.read_table(path).group_by("key").aggregate([("key", "count")]), args.repeats))
    record("pyarrow read + group_by count, one thread", timed(
        lambda: pq.read_table(path, use_threads=False).group_by("key", use_threads=False).aggregate([("key", "count")]),
        args.repeats))
    pyarrow_cpu_per_row = rows[1]["cpu_ns_per_row"]

    t0 = time.perf_counter()
    spark = local_session("dpspark-bench", "local[2]", shuffle_partitions=8, driver_memory=args.driver_memory,
                          ui=args.profile)
    print(f"(Spark session start {time.perf_counter() - t0:.1f}s; driver heap "
          f"{spark.sparkContext.getConf().get('spark.driver.memory', DEFAULT_DRIVER_MEMORY)})", flush=True)

    def scan_only():
        spark.read.parquet(str(path)).write.format("noop").mode("overwrite").save()

    def plain_groupby():
        spark.read.parquet(str(path)).groupBy("key").count().toArrow()

    def transfer_only():
        def consume(batches):  # type: ignore[no-untyped-def]
            n = 0
            for b in batches:
                n += b.num_rows
            yield pa.record_batch({"n": pa.array([n], pa.int64())})

        spark.read.parquet(str(path)).mapInArrow(consume, "n long").collect()

    if not args.quick:
        record("Spark scan only (Parquet -> noop sink)", timed(scan_only, args.repeats))
        record("Spark scan -> mapInArrow (Python only counts rows)", timed(transfer_only, args.repeats))
    for key, value in SPARK_STOCK.items():
        spark.conf.set(key, value)
    record("Spark groupBy(key).count, Spark stock settings", timed(plain_groupby, args.repeats),
           {"conf": dict(SPARK_STOCK)})
    for key, value in SPARK_STOCK.items():
        spark.conf.set(key, DEFAULT_CONF.get(key, value))  # (a tree that does not set it: Spark's value)
    record("Spark groupBy(key).count, dpspark settings", timed(plain_groupby, args.repeats))
    plain_ratio = rows[0]["median_s"] / rows[-1]["median_s"]

    def counting():  # type: ignore[no-untyped-def]
        return collect_counts(sparse_counts(read_input(spark, cfg.input), CountsStage.from_spec(cfg), SystemRandom()))

    identical, variant_ratio = None, None
    if not args.quick:
        variant = counts_to_python(arrow_partial_counting(spark, cfg))
        identical = dict(zip(*variant)) == dict(zip(*counts_to_python(counting())))
        record("§3 variant: Arrow partial counts in mapInArrow + merge", timed(
            lambda: arrow_partial_counting(spark, cfg), args.repeats), {"counts_identical_to_stage": identical})
        variant_ratio = rows[0]["median_s"] / rows[-1]["median_s"]
    first = last_stage_id(spark) + 1 if args.profile else 0
    record("dpspark counting stage (encode + count + collect)", timed(counting, args.repeats))
    counting_ratio = rows[0]["median_s"] / rows[-1]["median_s"]
    per_core_ratio = pyarrow_cpu_per_row / rows[-1]["cpu_ns_per_row"]
    profile = []
    if args.profile:
        # the last counting run's stages only
        stages = stage_profile(spark, first)
        n = len(stages) // (args.repeats + 1)
        profile = stages[-n:] if n else stages
        print("profile of the last counting run (task times summed over tasks; 2 cores):")
        print(f"  {'stage':>5}{'tasks':>6}{'run s':>8}{'cpu s':>8}{'gc s':>7}{'in rows':>12}{'shuf rd':>10}{'shuf wr':>10}")
        for s in profile:
            print(f"  {s['stage']:>5}{s['tasks']:>6}{s['run_s']:>8.2f}{s['cpu_s']:>8.2f}{s['gc_s']:>7.2f}"
                  f"{s['input_rows']:>12}{s['shuffle_read_rows']:>10}{s['shuffle_write_rows']:>10}")

    print(f"Spark/pyarrow throughput on the same 2 cores (wall): plain groupBy {plain_ratio:.3f}, dpspark counting "
          f"stage {counting_ratio:.3f}, the Arrow-partial-counts variant {variant_ratio or float('nan'):.3f} (target >= 0.5); per "  # report
          f"core (CPU per row against one-thread pyarrow): {per_core_ratio:.3f}; variant's counts identical: {identical}")

    memory = {}
    if args.release:
        from dpspark.engine.runner import run_release

        c0 = cpu_seconds()
        t0 = time.perf_counter()
        run_release(cfg, spark=spark, progress=lambda m: print(f"    [{time.perf_counter() - t0:7.1f}s] {m}", flush=True))
        total = time.perf_counter() - t0
        record("whole stability release (local[2], 1 run)", (total, [total], None, cpu_seconds() - c0))
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
                   "counting_over_pyarrow_throughput": counting_ratio,
                   "counting_per_core_cpu_over_one_thread_pyarrow": per_core_ratio,
                   "arrow_partial_counts_variant_over_pyarrow_throughput": variant_ratio,
                   "variant_counts_identical": identical,
                   "memory": memory,
                   "profile_last_counting_run": profile, "results": rows}, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
