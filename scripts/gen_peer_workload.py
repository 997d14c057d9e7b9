#!/usr/bin/env python3
"""Generate the peer workload: N rows of Zipf(1) draws over K random 62-bit int64 keys, one unit per row.

Usage: python scripts/gen_peer_workload.py OUT.parquet [--rows 10000000] [--keys 100000] [--seed 5]
Synthetic input data only (numpy's seeded Generator is fine here; no noise comes from it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    keys = rng.integers(0, 1 << 62, size=args.keys, dtype=np.int64)
    ranks = np.arange(1, args.keys + 1, dtype=np.float64)
    p = 1.0 / ranks
    p /= p.sum()
    pick = rng.choice(args.keys, size=args.rows, p=p)
    table = pa.table({"row_id": pa.array(np.arange(args.rows, dtype=np.int64)), "key": pa.array(keys[pick])})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, args.out, row_group_size=1 << 20)
    print(f"wrote {args.out}: {args.rows} rows over {args.keys} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
