#!/usr/bin/env python3
"""Peer benchmark: the peer workload released by dpspark (Arrow and Spark engines), OpenDP and plain pyarrow.

Workload (scripts/gen_peer_workload.py): 10M rows, Zipf(1) over 100k random 62-bit int64 keys, one unit
per row; epsilon = 1, delta = 1e-9, a histogram over the unknown key set (dpspark: the stability
mechanism over the int64 universe; OpenDP: count_by then Laplace threshold). All systems run in one
invocation, one after the other; the load average is recorded next to the figures.

Rows of the table:
* ``dpspark arrow (cold)``: a ``dpspark release --engine arrow`` subprocess (Python start-up included);
* ``dpspark spark (cold)``: the same with ``--engine spark`` (embedded local[*] Spark, JVM start-up included);
* ``dpspark spark (warm)``: ``dpspark.Session`` over a Spark DataFrame, the local[2] session already started
  (two runs: the first warms the JVM's JIT);
* ``opendp``: read the column with pyarrow, then OpenDP's ``make_count_by >> then_laplace_threshold``
  (optional ``bench`` extra; skipped with a note when it is not installed);
* ``pyarrow group_by``: the exact counts, no privacy (the floor for any engine on this machine).

Then a 4 MB CSV released end to end with a cold ``dpspark release`` on each engine.

Usage: python scripts/bench/peers.py [--data demo-output/peer-workload.parquet] [--skip-spark] [--skip-csv]
Writes bench-results/peers.json. Figures below are floats for reporting only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
EPSILON, DELTA = "1", "1e-9"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def peer_config(folder: Path, data: Path, rows: int, name: str) -> Path:
    """The peer workload's release config: stability histogram over the whole int64 range, row level."""
    text = f"""
[input]
path = "{data}"
[keys]
columns = ["key"]
[universe]
kind = "int_range"
lo = "-9223372036854775808"
hi = "9223372036854775807"
[privacy]
mechanism = "stability"
epsilon = "{EPSILON}"
delta = "{DELTA}"
max_units = {rows}
[output]
path = "{folder / name}"
"""
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def cold_release(config: Path, engine: str) -> tuple[float, float, Path, str]:
    """Wall seconds, peak RSS of the CLI process (MB; not the JVM), release directory, stderr."""
    out = Path(tomllib_output(config))
    timer = ["/usr/bin/time", "-f", "__peak_rss_kb=%M"] if Path("/usr/bin/time").exists() else []
    with tempfile.TemporaryFile(mode="w+") as log:
        t0 = time.perf_counter()
        code = subprocess.run([*timer, sys.executable, "-m", "dpspark.cli.app", "release", "--config", str(config),
                               "--engine", engine], env=_env(), stdout=log, stderr=log, text=True).returncode
        wall = time.perf_counter() - t0  # report
        log.seek(0)
        stderr = log.read()
    if code != 0:
        raise SystemExit(f"dpspark release --engine {engine} failed:\n{stderr[-3000:]}")
    marks = [line for line in stderr.splitlines() if line.startswith("__peak_rss_kb=")]
    rss = int(marks[-1].split("=")[1]) / 1024 if marks else float("nan")  # report: MB, the CLI's Python process
    return wall, rss, out, stderr


def tomllib_output(config: Path) -> str:
    import tomllib

    return tomllib.loads(config.read_text())["output"]["path"]


def released(out: Path) -> dict[int, int]:
    """key -> noisy count of a published release (post-processing of a DP output)."""
    t = pq.read_table(out / "bins.parquet", columns=["key", "noisy_count"])
    return dict(zip(t.column("key").to_pylist(), t.column("noisy_count").to_pylist()))


def accuracy(truth: dict[Any, int], noisy: dict[Any, int]) -> dict[str, Any]:
    """Released keys, median/max absolute error over released keys, recall of keys with true count >= 100."""
    errs = np.array([abs(v - truth.get(k, 0)) for k, v in noisy.items()], dtype=np.float64)  # report
    heavy = [k for k, c in truth.items() if c >= 100]
    return {
        "released_keys": len(noisy),
        "median_abs_error": float(np.median(errs)) if len(errs) else None,  # report
        "max_abs_error": float(errs.max()) if len(errs) else None,  # report
        "recall_true_ge_100": (sum(1 for k in heavy if k in noisy) / len(heavy)) if heavy else None,  # report
    }


def run_opendp(data: Path, rows: int) -> tuple[float, dict[int, int] | None, str]:
    """OpenDP 0.x: count_by over the key column, then a Laplace threshold calibrated to (1, 1e-9)."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return float("nan"), None, "opendp not installed (pip install 'dpspark[bench]')"
    dp.enable_features("contrib")
    t0 = time.perf_counter()
    keys = pq.read_table(data, columns=["key"]).column("key").to_numpy().tolist()
    try:
        count_by = dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.symmetric_distance(), TV=dp.i64)
        scale = 1.0  # report: OpenDP takes float parameters
        eps, delta = float(EPSILON), float(DELTA)  # report

        def build(threshold: int):  # type: ignore[no-untyped-def]
            return count_by >> dp.m.then_laplace_threshold(scale=scale, threshold=threshold)

        threshold = dp.binary_search_param(build, d_in=1, d_out=(eps, delta), bounds=(1, 10_000), T=int)
        meas = build(threshold)
        setup = time.perf_counter()
        noisy = meas(keys)
    except Exception as err:  # a different OpenDP API: skip with the reason
        return float("nan"), None, f"opendp {type(err).__name__}: {str(err)[:200]}"
    wall = time.perf_counter() - t0  # report
    note = f"scale {scale}, threshold {threshold}; input read + list conversion {setup - t0:.2f} s of the wall time"  # report
    return wall, {int(k): int(v) for k, v in noisy.items()}, note


def warm_spark(data: Path, rows: int, folder: Path) -> tuple[list[float], dict[int, int]]:
    """dpspark.Session over a Spark DataFrame on an already started local[2] session: two timed releases."""
    import dpspark
    from dpspark.engine.spark.local import local_session

    spark = local_session("peers-bench", "local[2]")
    try:
        df = spark.read.parquet(str(data))
        walls = []
        out = None
        for i in range(2):
            t0 = time.perf_counter()
            with dpspark.Session(df, max_units=rows) as s:
                h = s.histogram(keys=["key"], universe={"kind": "int_range", "lo": str(-(1 << 63)), "hi": str((1 << 63) - 1)},
                                mechanism="stability", epsilon=EPSILON, delta=DELTA, output=str(folder / f"warm{i}"))
            walls.append(time.perf_counter() - t0)  # report
            out = folder / f"warm{i}"
        del h
        return walls, released(out)
    finally:
        spark.stop()


def csv_release(folder: Path, engine: str, target_mb: float = 4.0) -> tuple[float, float, int]:
    """A ~4 MB CSV (user_id, query) released by a cold ``dpspark release``: wall seconds, RSS, file bytes."""
    csv = folder / "queries.csv"
    if not csv.exists():
        g = np.random.default_rng(7)  # synthetic input only
        n = int(target_mb * 1e6 / 16.8)  # about 16.8 bytes per row
        words = np.array([f"query-{i}" for i in range(20_000)])
        q = words[np.minimum(g.zipf(1.3, n), 20_000) - 1]
        users = g.integers(0, n // 2, n)
        import pyarrow.csv as pcsv

        pcsv.write_csv(pa.table({"user_id": users, "query": q}), csv)
    config = folder / f"csv-{engine}.toml"
    config.write_text(f"""
[input]
path = "{csv}"
[keys]
columns = ["query"]
[universe]
kind = "string"
max_bytes = 15
[privacy]
mechanism = "stability"
epsilon = "{EPSILON}"
delta = "{DELTA}"
max_units = 1000000
unit_column = "user_id"
[output]
path = "{folder / ('csv-release-' + engine)}"
""")
    wall, rss, _out, _err = cold_release(config, engine)
    return wall, rss, csv.stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "demo-output" / "peer-workload.parquet"))
    ap.add_argument("--skip-spark", action="store_true", help="only the one-machine systems")
    ap.add_argument("--skip-csv", action="store_true")
    ap.add_argument("--json", default=str(ROOT / "bench-results" / "peers.json"))
    args = ap.parse_args()
    data = Path(args.data)
    if not data.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_peer_workload.py"), str(data)], check=True)
    rows = pq.ParquetFile(data).metadata.num_rows
    load_before = os.getloadavg()
    folder = Path(tempfile.mkdtemp(prefix="dpspark-peers-"))
    results: list[dict[str, Any]] = []
    try:
        t0 = time.perf_counter()
        counts = pq.read_table(data, columns=["key"]).group_by("key").aggregate([([], "count_all")])
        wall = time.perf_counter() - t0  # report
        truth = dict(zip(counts.column("key").to_pylist(), counts.column("count_all").to_pylist()))
        results.append({"system": "pyarrow group_by (exact, no DP)", "wall_s": wall, **accuracy(truth, truth)})

        wall, rss, out, _ = cold_release(peer_config(folder, data, rows, "arrow"), "arrow")
        results.append({"system": "dpspark arrow (cold CLI)", "wall_s": wall, "peak_rss_mb": rss,
                        **accuracy(truth, released(out))})
        wall, noisy, note = run_opendp(data, rows)
        results.append({"system": "opendp count_by + laplace_threshold", "wall_s": wall, "note": note,
                        **(accuracy(truth, noisy) if noisy is not None else {})})
        if not args.skip_spark:
            wall, rss, out, _ = cold_release(peer_config(folder, data, rows, "spark"), "spark")
            results.append({"system": "dpspark spark (cold CLI, local[*])", "wall_s": wall,
                            "peak_rss_mb": rss, "note": "peak RSS of the CLI Python process only (not the JVM)", **accuracy(truth, released(out))})
            walls, noisy = warm_spark(data, rows, folder)
            for i, w in enumerate(walls):
                results.append({"system": f"dpspark spark (warm Session, local[2], run {i + 1})", "wall_s": w,
                                **accuracy(truth, noisy)})
        csv_rows = []
        if not args.skip_csv:
            for engine in ["arrow"] + ([] if args.skip_spark else ["spark"]):
                wall, rss, size = csv_release(folder, engine)
                csv_rows.append({"engine": engine, "wall_s": wall, "peak_rss_mb": rss, "csv_bytes": size})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    load_after = os.getloadavg()
    print(f"peer workload: {rows} rows, {len(truth)} keys; epsilon = {EPSILON}, delta = {DELTA}; "
          f"load {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'system':<48} {'wall s':>7} {'keys':>7} {'med err':>8} {'max err':>8} {'recall>=100':>11} {'RSS MB':>7}")
    for r in results:
        def f(k: str, spec: str) -> str:
            v = r.get(k)
            return format(v, spec) if v is not None else "-"
        print(f"{r['system']:<48} {f('wall_s', '7.2f')} {f('released_keys', '7d')} {f('median_abs_error', '8.1f')} "
              f"{f('max_abs_error', '8.0f')} {f('recall_true_ge_100', '11.4f')} {f('peak_rss_mb', '7.0f')}")
        if r.get("note"):
            print(f"    note: {r['note']}")
    for c in csv_rows:
        print(f"CSV release ({c['csv_bytes'] / 1e6:.1f} MB), cold dpspark release --engine {c['engine']}: "
              f"{c['wall_s']:.2f} s (peak RSS {c['peak_rss_mb']:.0f} MB)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({
        "rows": rows, "keys": len(truth), "epsilon": EPSILON, "delta": DELTA, "cores": os.cpu_count(),
        "load_before": load_before, "load_after": load_after, "results": results, "csv": csv_rows,
    }, indent=1))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
