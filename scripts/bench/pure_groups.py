#!/usr/bin/env python3
"""Pure-DP group-by over a 2^64 universe (docs/groups.md §H) next to the approximate-DP groups path.

The Zipf workload of scripts/gen_groups_workload.py (Zipf(1) over 100,000 random 62-bit keys, one unit per row,
a value in [0, 100]) at n rows; both releases read the same Parquet file on the Arrow engine, count and sum
[0, 100] per key, keys selected privately from int_range [-2^63, 2^63 - 1] (|X| = 2^64), the same epsilon:
  pure_groups  pure eps (this module's subject);
  groups       (eps, delta = 1e-9), the threshold selection of docs/groups.md §F.
No peer has a pure-DP group-by over an unbounded universe, so there is no peer row.

Metrics (floats, reporting only): keys released (all, and true keys: keys with rows), the median and max
absolute error of the count and the sum over the released true keys, pooled over trials, the per-key bars,
and seconds per release (median; the data read included). The 1-minute load average is printed with each row.
"trim (true)": the rows ``privacy.trim`` would keep (noisy count above the simultaneous bar; post-processing of
the same release) and how many of them are true keys (for groups: every row).

Usage: python scripts/bench/pure_groups.py [--rows 10000,100000] [--trials 2] [--epsilon 1] [--out PATH]
Writes bench-results/pure_groups-<rows>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
UNIVERSE = {"kind": "int_range", "lo": -(1 << 63), "hi": (1 << 63) - 1}  # every int64: |X| = 2^64
AGGS = [{"name": "count", "kind": "count"}, {"name": "sum", "kind": "sum", "column": "value", "lo": "0", "hi": "100"}]


def data(rows: int, folder: Path) -> Path:
    path = folder / f"zipf-{rows}.parquet"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_groups_workload.py"), "zipf", str(path),
                        "--rows", str(rows)], check=True, stdout=subprocess.DEVNULL)
    return path


def truth(path: Path) -> dict[int, tuple[int, int]]:
    import pyarrow.parquet as pq

    g = pq.read_table(path, columns=["key", "value"]).group_by("key").aggregate([("value", "count"), ("value", "sum")])
    return {int(k): (int(c), int(s)) for k, c, s in zip(g.column("key").to_pylist(), g.column("value_count").to_pylist(),
                                                        g.column("value_sum").to_pylist())}


def run(system: str, path: Path, rows: int, eps: str, seed: int, out: Path) -> tuple[Any, float]:
    import dpspark
    from dpspark.rng import SeededRandom

    start = time.monotonic()
    with dpspark.Session(path, max_units=rows, rng=SeededRandom(seed)) as s:
        if system == "pure_groups":
            rel = s.release(mechanism="pure_groups", epsilon=eps, output=out,
                            sections={"groups": {"by": "key"}, "aggregates": AGGS, "universe": UNIVERSE})
        else:
            rel = s.groups(by="key", aggregates=AGGS, universe=UNIVERSE, epsilon=eps, delta="1e-9", output=out)
    return rel, time.monotonic() - start


def score(rel: Any, exact: dict[int, tuple[int, int]]) -> dict[str, Any]:
    t = rel.to_arrow()
    keys = t.column("key").to_pylist()
    counts = [float(x) for x in t.column("count_float").to_pylist()]  # report
    sums = [float(x) for x in t.column("sum_float").to_pylist()]  # report
    ce, se = [], []
    for k, c, s in zip(keys, counts, sums):
        if int(k) in exact:
            ce.append(abs(c - exact[int(k)][0]))  # report
            se.append(abs(s - exact[int(k)][1]))  # report
    bars = {n: float(Fraction(t.column(f"{n}_error")[0].as_py())) if t.num_rows else None  # report
            for n in ("count", "sum")}
    bar = rel.manifest.parameters.get("simultaneous_count_bar")  # pure_groups: privacy.trim's floor
    above = [k for k, c in zip(keys, counts) if bar is None or c > float(Fraction(bar))]  # report
    return {"released": len(keys), "true": len(ce), "count_err": ce, "sum_err": se, "bars": bars,
            "trimmed": len(above), "trimmed_true": sum(1 for k in above if int(k) in exact), "trim_bar": bar}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", default="10000,100000")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    sizes = [int(x) for x in args.rows.split(",")]
    folder = ROOT / "bench-results" / "groups-data"
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    print(f"{'rows':>8} {'system':<12} {'released':>9} {'true':>6} {'trim (true)':>12} {'count med/max':>14} "
          f"{'sum med/max':>16} {'bars c/s':>12} {'s/release':>10} {'load':>6}")
    for rows in sizes:
        path = data(rows, folder)
        exact = truth(path)
        for system in ("pure_groups", "groups"):
            recs, secs = [], []
            for trial in range(args.trials):
                with tempfile.TemporaryDirectory() as tmp:
                    rel, sec = run(system, path, rows, args.epsilon, 100 + trial, Path(tmp) / "rel")
                    recs.append(score(rel, exact))
                    secs.append(sec)
            ce = [e for r in recs for e in r["count_err"]]
            se = [e for r in recs for e in r["sum_err"]]
            row = {"rows": rows, "system": system, "epsilon": args.epsilon,
                   "delta": "0" if system == "pure_groups" else "1e-9", "keys_in_data": len(exact),
                   "released": statistics.median(r["released"] for r in recs),
                   "true_released": statistics.median(r["true"] for r in recs),
                   "count_median": statistics.median(ce) if ce else None, "count_max": max(ce) if ce else None,
                   "sum_median": statistics.median(se) if se else None, "sum_max": max(se) if se else None,
                   "trimmed": statistics.median(r["trimmed"] for r in recs),
                   "trimmed_true": statistics.median(r["trimmed_true"] for r in recs), "trim_bar": recs[0]["trim_bar"],
                   "bars": recs[0]["bars"], "seconds_median": statistics.median(secs), "seconds": secs,
                   "load": os.getloadavg()[0]}
            results.append(row)
            print(f"{rows:>8} {system:<12} {row['released']:>9} {row['true_released']:>6} "
                  f"{row['trimmed']:>6} ({row['trimmed_true']:>3}) "
                  f"{row['count_median']:>6.1f}/{row['count_max']:<7.0f} {row['sum_median']:>7.1f}/{row['sum_max']:<8.0f} "
                  f"{row['bars']['count']:>5.0f}/{row['bars']['sum']:<6.0f} {row['seconds_median']:>10.1f} "
                  f"{row['load']:>6.1f}", flush=True)
    out = Path(args.out) if args.out else ROOT / "bench-results" / f"pure_groups-{args.rows.replace(',', '-')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
