#!/usr/bin/env python3
"""Generate inputs for the sampler examples (conf/kary_sampler.toml, conf/bernoulli_sampler.toml).

Usage: python scripts/gen_samplers.py OUT.parquet --kind kary|bernoulli [--rows N] [--columns D] [--seed S]

* kary: RSSS's hard instance on k = 100 symbols 0..99 with alpha0 = 1/100: mass 1 - 60 alpha0 = 0.4 on
  symbol 0, the rest uniform on the 50 symbols 1..50 (one row per user: user_id, symbol);
* bernoulli: D binary columns b0..b{D-1} (0/1 ints), column j with bias 1/3 + (j mod 7)/21 in [1/3, 2/3].
Synthetic input data only (numpy's seeded Generator is fine here; no noise comes from it).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def hard_instance(k: int = 100) -> np.ndarray:
    """RSSS's lower-bound instance: 0.4 on symbol 0, 0.6 spread over symbols 1..k/2 (float: data generation)."""
    p = np.zeros(k)
    p[0] = 0.4
    p[1: k // 2 + 1] = 0.6 / (k // 2)
    return p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--kind", choices=("kary", "bernoulli"), required=True)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--columns", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    ids = pa.array(np.arange(args.rows), pa.int64())
    if args.kind == "kary":
        sym = rng.choice(100, size=args.rows, p=hard_instance())
        table = pa.table({"user_id": ids, "symbol": pa.array(sym.astype(np.int64))})
    else:
        cols = {"user_id": ids}
        for j in range(args.columns):
            bias = 1 / 3 + (j % 7) / 21
            cols[f"b{j}"] = pa.array((rng.random(args.rows) < bias).astype(np.int64))
        table = pa.table(cols)
    pq.write_table(table, args.out)
    print(f"wrote {args.out}: {args.rows} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
