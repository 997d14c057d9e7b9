#!/usr/bin/env python3
"""Generate a synthetic measurements table for the ``answers`` examples (conf/answers_*.toml).

Columns: user_id (int64; several rows per user), age (int64), income (float64, thousands), hours
(float64), region (string). Also used by scripts/bench/answers_spark.py with --cols for wide tables.

Usage: python scripts/gen_measurements.py OUT.parquet [--rows 1000000] [--users 200000] [--cols 0] [--seed 5]
Synthetic input data only (numpy's seeded Generator is fine here; no noise comes from it).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--cols", type=int, default=0, help="extra float columns v0..v{cols-1} in [0, 1)")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.rows
    cols = {
        "user_id": pa.array(rng.integers(0, args.users, n), pa.int64()),
        "age": pa.array(np.clip(rng.normal(41, 15, n).round(), 16, 99).astype(np.int64)),
        "income": pa.array(np.round(rng.lognormal(3.6, 0.6, n), 2)),
        "hours": pa.array(np.round(np.clip(rng.normal(38, 9, n), 0, 80), 1)),
        "region": pa.array(np.array(["north", "south", "east", "west"])[rng.integers(0, 4, n)]),
    }
    for j in range(args.cols):
        cols[f"v{j}"] = pa.array(rng.random(n))
    pq.write_table(pa.table(cols), args.out)
    print(f"wrote {args.out}: {n} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
