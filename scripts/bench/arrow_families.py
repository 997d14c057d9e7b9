#!/usr/bin/env python3
"""Time the product and Gaussian families and 16 filtered bounded-noise sums as a user runs them: a cold CLI release, default engine (issue 24 goal 1).

Usage: .venv/bin/python scripts/bench/arrow_families.py [--rows 336776] [--engine arrow|spark] [--out bench-results/arrow_families]

The input (generated once under --out if missing; synthetic, numpy's seeded generator, no noise from it) is one
Parquet file: ``uid`` (one row per unit), ``g0..g2`` ~ N(mu, Sigma) (kappa 100, ||mu|| = 10, as
scripts/gen_gaussian.py) and ``b0..b6`` binary with the biases of scripts/gen_product.py. Each case is ONE
fresh process, ``dpspark release --config ...`` (no --engine: the default engine picks Arrow for a local
file; ``--engine spark`` forces the embedded Spark session for the "before" figure), timed end to end.
Prints a table (seconds, load average at the start of each run, exit code) and writes
``<out>/arrow_families.json`` (``arrow_families-<engine>.json`` with ``--engine``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

GAUSS = """[input]
path = "{data}"
[gaussian]
columns = ["g0", "g1", "g2"]
radius = "20"
kappa = "100"
[privacy]
mechanism = "gaussian_learner"
epsilon = "1"
delta = "1/1000000000"
max_units = {rows}
unit_column = "uid"
[output]
path = "{out}"
"""

PRODUCT = """[input]
path = "{data}"
[columns]
names = ["b0", "b1", "b2", "b3", "b4", "b5", "b6"]
[privacy]
mechanism = "product_learner"
epsilon = "1"
delta = "1/1000000000"
max_units = {rows}
unit_column = "uid"
alpha = "1/2"
beta = "1/20"
[output]
path = "{out}"
"""

def _filtered_sums() -> str:
    """16 overlapping filtered sums (bounded noise, k = 16): each of g0..g3's clipped sum under 4 filters."""
    filters = ["b0 = TRUE", "b1 = 1 AND g2 > 0", "b2 = FALSE OR g1 BETWEEN -5 AND 5", "NOT (b3 = 0) OR g0 IS NULL"]
    out = []
    for j, col in enumerate(["g0", "g1", "g2", "g0"]):
        for i, f in enumerate(filters):
            out.append(f'[[queries]]\nname = "s{j}_{i}"\nkind = "sum"\ncolumn = "{col}"\nlo = "-30"\nhi = "30"\n'
                       f'filter = "{f}"\n')
    return "".join(out)


ANSWERS = """[input]
path = "{data}"
[privacy]
mechanism = "bounded_noise"
epsilon = "1"
delta = "1/1000000000"
max_units = {rows}
unit_column = "uid"
""" + _filtered_sums() + """[output]
path = "{out}"
"""

#: (case, config template, target seconds from issue 24)
CASES = [("gaussian_learner d=3", GAUSS, 10.0), ("product_learner d=7", PRODUCT, 5.0),
         ("16 filtered sums", ANSWERS, 2.0)]


def make_input(path: Path, rows: int) -> None:
    """The synthetic input (module docstring), written once."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    g = np.random.default_rng(336776)  # report: synthetic input only
    d = 3
    q, _ = np.linalg.qr(g.normal(size=(d, d)))
    sigma = (q * np.geomspace(1.0, 100.0, d)) @ q.T  # report: synthetic input
    mu = g.normal(size=d)
    mu *= 10 / np.linalg.norm(mu)  # report
    x = g.multivariate_normal(mu, sigma, size=rows, method="eigh")
    cols = {"uid": pa.array(np.arange(rows, dtype=np.int64))}
    cols.update({f"g{j}": pa.array(x[:, j]) for j in range(d)})
    cycle = [0.5, 0.9, 0.2, 1 / 7, 1e-3, 0.0, 0.5]  # report: synthetic biases
    for j, p in enumerate(cycle):
        bits = g.random(rows) < p
        cols[f"b{j}"] = pa.array(bits) if j % 2 == 0 else pa.array(bits.astype(np.int64))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), path)


def run_case(config: Path, out: Path, engine: str | None) -> tuple[float, int, str]:
    """One cold CLI release: (seconds, exit code, the last progress lines)."""
    cmd = [sys.executable, "-c", "from dpspark.cli.app import main; raise SystemExit(main())",
           "release", "--config", str(config), "--output", str(out)]
    if engine:
        cmd += ["--engine", engine]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    return took, done.returncode, (done.stdout + done.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=336_776)
    ap.add_argument("--engine", choices=["arrow", "spark"], default=None, help="default: the CLI's own choice")
    ap.add_argument("--out", default="bench-results/arrow_families")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    data = out / f"families_{args.rows}.parquet"
    if not data.exists():
        make_input(data, args.rows)
    results = []
    for name, template, target in CASES:
        slug = name.split()[0]
        config = out / f"{slug}.toml"
        release = out / f"release-{slug}-{args.engine or 'default'}"
        config.write_text(template.format(data=data, rows=args.rows, out=release))
        if release.exists():  # the bench's own previous release (a release never overwrites one)
            shutil.rmtree(release)
        load = os.getloadavg()[0]
        took, code, log = run_case(config, release, args.engine)
        passes = sum(1 for line in log.splitlines() if "] pass " in line)
        results.append({"case": name, "engine": args.engine or "default", "rows": args.rows, "seconds": round(took, 2),
                        "target_seconds": target, "exit": code, "load1": round(load, 2),
                        "file_mb": round(data.stat().st_size / 1e6, 2), "pass_lines": passes,
                        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        if code:
            print(log[-2000:], file=sys.stderr)
    print(f"{'case':24s} {'engine':8s} {'seconds':>8s} {'target':>7s} {'load1':>6s}  exit")
    for r in results:
        print(f"{r['case']:24s} {r['engine']:8s} {r['seconds']:8.2f} {r['target_seconds']:7.1f} {r['load1']:6.2f}  {r['exit']}")
    written = out / f"arrow_families{'-' + args.engine if args.engine else ''}.json"
    written.write_text(json.dumps(results, indent=2))
    print(f"input: {data} ({results[0]['file_mb']} MB, {args.rows} rows); wrote {written}")
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
