"""The cost of a private join on the unit (Arrow engine): ``Session.groups`` over orders joined with users
(per-unit truncation of each table, the join, then the groups stage) against the same release over a table
joined beforehand (the groups stage alone). Synthetic data (numpy's seeded Generator: no noise is drawn with
it); one command, a table on stdout, JSON in /tmp/bench_private_join.json.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench/private_join.py [--rows 1000000] [--units 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    import numpy as np
    import pyarrow as pa

    import dpspark
    from dpspark.rng import SeededRandom

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--units", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    orders = pa.table({"cid": rng.integers(0, args.units, args.rows), "amount": rng.gamma(2.0, 20.0, args.rows)})
    users = pa.table({"cid": np.arange(args.units), "region": rng.choice(["n", "s", "e", "w"], args.units)})
    joined = orders.join(users, ["cid"])
    aggs = [{"name": "n", "kind": "count"}, {"name": "amt", "kind": "sum", "column": "amount", "lo": "0", "hi": "100"}]
    out = Path(tempfile.mkdtemp(prefix="bench-pj-"))
    times: dict[str, list[float]] = {"private join": [], "pre-joined": []}
    for i in range(args.repeat):
        for name in times:
            tables = {"orders": orders, "users": users} if name == "private join" else {"orders": joined}
            with dpspark.Session(tables=tables, max_units=10 * args.units, unit_column="cid",
                                 rng=SeededRandom(i)) as s:
                join = {"table": "users", "on": "cid", "private": True} if name == "private join" else None
                t0 = time.perf_counter()
                s.groups(by=["region"], keys=["n", "s", "e", "w"], epsilon="1", max_rows_per_group=5, aggregates=aggs,
                         join=join, output=out / f"{name.replace(' ', '-')}-{i}")
                times[name].append(time.perf_counter() - t0)  # report
    med = {k: statistics.median(v) for k, v in times.items()}  # report
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"rows {args.rows:,}  units {args.units:,}  repeat {args.repeat}  load {' '.join(load)}")
    print(f"{'release':<14}{'median s':>10}")
    for k, v in med.items():
        print(f"{k:<14}{v:>10.2f}")
    print(f"ratio private join / pre-joined: {med['private join'] / med['pre-joined']:.2f}")  # report
    Path("/tmp/bench_private_join.json").write_text(json.dumps({"args": vars(args), "load": load, "times": times,
                                                                 "median": med}, indent=1))


if __name__ == "__main__":
    main()
