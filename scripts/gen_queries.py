#!/usr/bin/env python3
"""Generate a realistic demo dataset: search-query-like string keys, Zipf-distributed, with a user id.

Usage: python scripts/gen_queries.py OUT.parquet [--rows 1000000] [--users 200000] [--seed 7]
Writes Parquet with pyarrow: columns user_id (int64), query (string), ts (int64).
This is synthetic *input data*, so numpy's seeded Generator is fine here; no
release noise ever comes from it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

WORDS = (
    "cat dog tea map bus car art gym job tax vpn ufo pie jam fox owl bee ski spa zoo "
    "news food rain snow wind golf jazz yoga sale rent bank loan taxi hotel pizza sushi "
    "paris rome oslo lima cairo tokyo delhi miami sofia kyiv nyc la sf uk eu us"
).split()
MAX_BYTES = 15


def vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """Distinct short queries (1-3 words, at most MAX_BYTES UTF-8 bytes), plus a few non-ASCII ones."""
    seen: dict[str, None] = {}
    extras = ["café", "crème brûlée", "müsli", "東京 hotel", "naïve", "piñata"]
    for q in extras:
        seen[q] = None
    while len(seen) < size:
        k = int(rng.integers(1, 4))
        q = " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), k))
        if len(q.encode()) <= MAX_BYTES:
            seen[q] = None
    return list(seen)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--vocab", type=int, default=50_000)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    vocab = vocabulary(rng, args.vocab)
    # Zipf ranks truncated to the vocabulary, rank 1 most popular
    ranks = rng.zipf(args.zipf, size=args.rows * 2)
    ranks = ranks[ranks <= len(vocab)][: args.rows]
    while len(ranks) < args.rows:  # bounded: the truncation keeps most draws
        more = rng.zipf(args.zipf, size=args.rows)
        ranks = np.concatenate([ranks, more[more <= len(vocab)]])[: args.rows]
    queries = pa.array(vocab, pa.string()).take(pa.array(ranks - 1))
    users = pa.array(rng.integers(1, args.users + 1, args.rows), pa.int64())
    ts = pa.array(np.sort(rng.integers(1_700_000_000, 1_700_000_000 + 86_400 * 30, args.rows)), pa.int64())
    table = pa.table({"user_id": users, "query": queries, "ts": ts})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # e.g. a fresh demo-output/
    pq.write_table(table, args.out, row_group_size=256_000)
    print(f"wrote {args.out}: {args.rows} rows, {args.users} user ids, vocabulary {len(vocab)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
