#!/usr/bin/env python3
"""Generate Gaussian rows for the conf/gaussian_*.toml examples: uid + x0..x{d-1} ~ N(mu, Sigma).

Usage: python scripts/gen_gaussian.py OUT.parquet [--rows 200000] [--dim 5] [--kappa 100] [--radius 20] [--seed 5]
Sigma = Q diag(geomspace(1, kappa, d)) Q^T (Q random orthogonal), ||mu||_2 = radius / 2. Synthetic input
only (numpy's seeded Generator is fine here; no noise comes from it). The true mu and Sigma are written
next to the file as OUT.truth.json for comparison.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=5)
    ap.add_argument("--kappa", type=float, default=100.0)
    ap.add_argument("--radius", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    g = np.random.default_rng(args.seed)
    d = args.dim
    q, _ = np.linalg.qr(g.normal(size=(d, d)))
    sigma = (q * np.geomspace(1.0, args.kappa, d)) @ q.T
    mu = g.normal(size=d)
    mu *= args.radius / 2 / np.linalg.norm(mu)
    chunk = 1_000_000  # rows per write: 10^7 x 100 doubles never sit in memory at once (one chunk: same file as before)
    writer = None
    for start in range(0, args.rows, chunk):
        rows = min(chunk, args.rows - start)
        x = g.multivariate_normal(mu, sigma, size=rows, method="eigh")
        cols = {"uid": pa.array(np.arange(start, start + rows, dtype=np.int64))}
        cols.update({f"x{j}": pa.array(x[:, j]) for j in range(d)})
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(args.out, table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()
    with open(args.out.removesuffix(".parquet") + ".truth.json", "w") as fh:
        json.dump({"mean": mu.tolist(), "covariance": sigma.tolist()}, fh)
    print(f"wrote {args.out}: {args.rows} rows, d = {d}, kappa = {args.kappa}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
