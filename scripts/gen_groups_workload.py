#!/usr/bin/env python3
"""Workloads of scripts/bench/groups.py (issue 22 §4): synthetic input data only (numpy's seeded Generator).

  public OUT --rows N [--groups 20] [--seed 7]
      string key g00..g19 with sizes proportional to 1/sqrt(rank), one unit per row, and an integer
      value in [0, 100] (rounded normal, a different mean and spread per group).
  zipf OUT --rows N [--keys 100000] [--seed 5]
      scripts/gen_peer_workload.py (Zipf(1) over random 62-bit int64 keys, one unit per row) plus an
      integer value column in [0, 100] (uniform), seeded separately.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def public(out: Path, rows: int, groups: int, seed: int) -> None:
    """Public-key workload: ~`groups` keys, skewed sizes, per-group value distributions."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.sqrt(np.arange(1, groups + 1, dtype=np.float64))
    pick = rng.choice(groups, size=rows, p=p / p.sum())
    mu = rng.uniform(20, 80, size=groups)[pick]
    sd = rng.uniform(5, 25, size=groups)[pick]
    value = np.clip(np.rint(rng.normal(mu, sd)), 0, 100).astype(np.int64)
    names = np.array([f"g{i:02d}" for i in range(groups)], dtype=object)
    table = pa.table({"row_id": pa.array(np.arange(rows, dtype=np.int64)),
                      "key": pa.array(names[pick], type=pa.string()), "value": pa.array(value)})
    pq.write_table(table, out, row_group_size=1 << 20)


def zipf(out: Path, rows: int, keys: int, seed: int) -> None:
    """The peer workload of scripts/gen_peer_workload.py plus a uniform integer value in [0, 100]."""
    tmp = out.with_suffix(".keys.parquet")
    subprocess.run([sys.executable, str(HERE / "gen_peer_workload.py"), str(tmp), "--rows", str(rows),
                    "--keys", str(keys), "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    table = pq.read_table(tmp)
    value = np.random.default_rng(seed + 1000).integers(0, 101, size=table.num_rows, dtype=np.int64)
    pq.write_table(table.append_column("value", pa.array(value)), out, row_group_size=1 << 20)
    tmp.unlink()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["public", "zipf"])
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.kind == "public":
        public(out, args.rows, args.groups, 7 if args.seed is None else args.seed)
    else:
        zipf(out, args.rows, args.keys, 5 if args.seed is None else args.seed)
    print(f"wrote {out}: {args.rows} rows ({args.kind})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
