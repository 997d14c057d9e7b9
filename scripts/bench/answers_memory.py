#!/usr/bin/env python3
"""Bench: peak memory of the Arrow ``answers`` data pass, 1,000 sums over 10^6 rows (streamed, O(units + queries)).

Usage: python scripts/bench/answers_memory.py [--rows 1000000] [--queries 1000] [--units 0] [--json out.json]

The input (Parquet under bench-results/: float columns v0..v3 in [0, 1), y in [0, 100), and u, a unit id in
[0, --units) when --units > 0) is generated once. Query j sums v_{j mod 4} clipped to [0, hi_j] at scale 2^10;
every other query carries a filter of overlapping ranges, ``y BETWEEN a_j AND b_j`` (almost all distinct, so
they cannot share a value histogram: the per-query path). Each
configuration runs :func:`dpspark.mechanisms.answers.arrow_kernel.scalar_totals_arrow` in a fresh child process, which
reports its own peak RSS (``resource.getrusage``: the whole process, Python and Arrow buffers) and the wall
time of the pass; a table is printed and the figures are written as JSON. Three totals are checked against a
direct numpy computation in the parent (exact: the values are whole multiples of 2^-10 only after rounding,
so the check recomputes the engine's definition).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
COLS = 4


def make_input(path: Path, rows: int, units: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(23)  # synthetic input only
    writer = None
    for start in range(0, rows, 250_000):
        n = min(250_000, rows - start)
        cols = {f"v{c}": rng.random(n) for c in range(COLS)}
        cols["y"] = rng.random(n) * 100
        if units:
            cols["u"] = rng.integers(0, units, n)
        t = pa.table(cols)
        writer = writer or pq.ParquetWriter(str(path), t.schema)
        writer.write_table(t)
    writer.close()


def _range(j: int) -> tuple[int, int]:
    """Query j's filter range: overlapping, and distinct for (almost) every filtered query."""
    a = j % 70
    return a, a + 20 + j % 17


def queries(k: int) -> list[dict]:
    out = []
    for j in range(k):
        q = {"name": f"q{j}", "kind": "sum", "column": f"v{j % COLS}", "lo": "0",
             "hi": str(Fraction(1 + j % 997, 997)), "scale_bits": 10}
        if j % 2:
            a, b = _range(j)
            q["filter"] = f"y BETWEEN {a} AND {b}"
        out.append(q)
    return out


def child(data: str, k: int, unit: str | None) -> None:
    """One data pass in this (fresh) process; prints JSON with peak RSS and wall time."""
    import resource

    import pyarrow.dataset as ds

    from dpspark.mechanisms.answers.arrow_kernel import scalar_totals_arrow
    from dpspark.mechanisms.answers.queries import parse_queries, scalars_of

    scalars = scalars_of(parse_queries(queries(k)))
    dataset = ds.dataset(data)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    totals = scalar_totals_arrow(dataset, scalars, unit)
    wall = time.perf_counter() - t0  # report
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_rss_mib": round(peak / 1024, 1), "rss_before_pass_mib": round(base / 1024, 1),  # report
                      "wall_s": round(wall, 2), "totals_head": [str(t) for t in totals[:3]]}))


def check(data: Path, k: int, head: list[str]) -> bool:
    """The first three totals recomputed directly (no unit column): clip(round half away(x 2^10), 0, hi)."""
    import numpy as np
    import pyarrow.parquet as pq

    t = pq.read_table(data)
    ok = True
    for j, q in enumerate(queries(k)[:3]):
        x = t.column(q["column"]).to_numpy() * 1024.0  # report: the engine's own preprocessing
        if "filter" in q:
            a, b = _range(j)
            y = t.column("y").to_numpy()
            x = np.where((y >= a) & (y <= b), x, 0.0)
        v = np.sign(x) * np.floor(np.abs(x) + 0.5)  # report: values in [0, 1024): the naive rounding is exact here
        hi = (Fraction(q["hi"]) * 1024).__ceil__()
        ok &= int(np.clip(v, 0, hi).astype(np.int64).sum()) == int(head[j])
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--units", type=int, default=0, help="also run with a unit column of this many units")
    ap.add_argument("--json", default=str(ROOT / "bench-results" / "answers_memory.json"))
    ap.add_argument("--child", nargs=3, metavar=("DATA", "K", "UNIT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), None if args.child[2] == "-" else args.child[2])
        return 0
    out_dir = ROOT / "bench-results"
    out_dir.mkdir(exist_ok=True)
    data = out_dir / f"answers_memory_{args.rows}_{args.units}.parquet"
    if not data.exists():
        make_input(data, args.rows, args.units)
    runs = []
    configs = [(args.queries, None)] + ([(args.queries, "u")] if args.units else [])
    for k, unit in configs:
        proc = subprocess.run([sys.executable, __file__, "--child", str(data), str(k), unit or "-"],
                              capture_output=True, text=True, check=True, cwd=ROOT)
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        res.update({"rows": args.rows, "queries": k, "filtered": k // 2, "unit_column": unit,
                    "units": args.units if unit else args.rows})
        if unit is None:
            res["checked"] = check(data, k, res["totals_head"])
        runs.append(res)
    print(f"{'rows':>9} {'queries':>8} {'filtered':>8} {'units':>9} {'peak RSS MiB':>13} {'before MiB':>11} "
          f"{'wall s':>8} {'checked':>8}")
    for r in runs:
        print(f"{r['rows']:>9} {r['queries']:>8} {r['filtered']:>8} {r['units']:>9} {r['peak_rss_mib']:>13} "
              f"{r['rss_before_pass_mib']:>11} {r['wall_s']:>8} {str(r.get('checked', '-')):>8}")
    Path(args.json).write_text(json.dumps({"bench": "answers_memory", "runs": runs}, indent=2))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
