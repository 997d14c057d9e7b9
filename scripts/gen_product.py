#!/usr/bin/env python3
"""Synthetic rows of a product distribution over d binary columns (for conf/product_*.toml).

Usage: scripts/gen_product.py OUT.parquet [--rows N] [--cols D] [--seed S] [--array NAME]
Columns: ``id`` (the unit id, 0..N-1) and ``x00``.. (booleans, then 0/1 ints, alternating) with biases
cycling through 1/2, 0.9, 0.2, 1/D, 10^-3, 0 - the mix of RSSS's product-sampler test (simulated data).
``--array NAME``: the same bits as ONE column NAME of type list<int8> (element j = bit j, always D long)
instead of D columns (for ``[columns] array = NAME``, ``width = D``).
"""

from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def biases(d: int) -> list[float]:
    """The column biases: 1/2, 0.9, 0.2, 1/d, 1e-3, 0, repeated."""
    cycle = [0.5, 0.9, 0.2, 1 / d, 1e-3, 0.0]  # report: simulated data
    return [cycle[j % len(cycle)] for j in range(d)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--array", default=None, help="write one list<int8> column of this name instead of D columns")
    args = ap.parse_args()
    gen = np.random.default_rng(args.seed)
    p = np.array(biases(args.cols))
    # row groups of ~64 MiB of raw values at most: Spark splits a file by row group, so one huge group
    # (the default at 10^6 rows) leaves one core idle in the read
    group = max(1, min(100_000, (1 << 26) // (args.cols + 8)))
    chunk = 1_000_000  # rows per write: 10^7 x 1000 never sits in memory at once (one chunk: same file as before)
    writer = None
    for start in range(0, args.rows, chunk):
        rows = min(chunk, args.rows - start)
        cols: dict[str, pa.Array] = {"id": pa.array(np.arange(start, start + rows, dtype=np.int64))}
        bits = []
        for j in range(args.cols):  # column by column, so --array draws exactly the bits of the D-column file
            x = gen.random(rows) < p[j]  # report: simulated data
            if args.array is None:
                cols[f"x{j:02d}"] = pa.array(x if j % 2 == 0 else x.astype(np.int8))
            else:
                bits.append(x.astype(np.int8))
        if args.array is not None:
            flat = np.stack(bits, axis=1).reshape(-1) if bits else np.zeros(0, np.int8)
            small = rows * args.cols < 1 << 31  # int32 offsets unless they would overflow
            offsets = np.arange(0, rows * args.cols + 1, args.cols, dtype=np.int32 if small else np.int64)
            kind = pa.ListArray if small else pa.LargeListArray
            cols[args.array] = kind.from_arrays(pa.array(offsets), pa.array(flat, pa.int8()))
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(args.out, table.schema)
        writer.write_table(table, row_group_size=group)
    if writer is not None:
        writer.close()
    print(args.out)


if __name__ == "__main__":
    main()
