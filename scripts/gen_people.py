#!/usr/bin/env python3
"""Generate a small demo table of people with ages (for conf/ages-dense.toml).

Usage: python scripts/gen_people.py OUT.parquet [--rows 200000] [--seed 3]
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
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    ages = np.clip(rng.normal(40, 18, args.rows).round(), 0, 105).astype(np.int64)
    pq.write_table(pa.table({"person_id": pa.array(np.arange(args.rows), pa.int64()), "age": pa.array(ages)}), args.out)
    print(f"wrote {args.out}: {args.rows} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
