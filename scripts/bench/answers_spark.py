#!/usr/bin/env python3
"""Bench: an ``answers`` release of 10^4 clipped sums over 10^7 rows on Spark, stage by stage.

Usage: python scripts/bench/answers_spark.py [--rows 10000000] [--queries 10000] [--cols 4]
       [--master local[2]] [--mechanism bounded_noise|gaussian|both] [--json out.json]

The input (``--cols`` float columns in [0, 1), every row a unit) is generated once under
bench-results/. Query j sums column v_{j mod cols} clipped to [0, hi_j], hi_j = (1 + j mod 997) / 997
at scale 2^10. Stages timed: plan (calibration), Spark pass (exact totals), noise + post-processing,
write, open + verify. The empirical error |answer - true| of every answer is compared with its certified
R (bounded noise: probability 1) and the simultaneous 95% bound. The true totals are used only here,
to measure the error; they are never written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from fractions import Fraction
from pathlib import Path
from dpspark.mechanisms.registry import construct

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def make_input(path: Path, rows: int, cols: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(17)  # synthetic input only
    chunk = 1_000_000
    writer = None
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        t = pa.table({f"v{c}": rng.random(n) for c in range(cols)})
        writer = writer or pq.ParquetWriter(str(path), t.schema)
        writer.write_table(t)
    writer.close()


def queries(k: int, cols: int) -> list[dict]:
    return [{"name": f"q{j}", "kind": "sum", "column": f"v{j % cols}", "lo": "0",
             "hi": str(Fraction(1 + j % 997, 997)), "scale_bits": 10} for j in range(k)]


def run(mechanism: str, args: argparse.Namespace, data: Path, spark) -> dict:  # type: ignore[no-untyped-def]
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.engine.runner import write_release
    from dpspark.lookup import open_release
    from dpspark.mechanisms.answers.queries import scalars_of
    from dpspark.release.manifest import utc_now
    from dpspark.rng import default_source

    out_dir = ROOT / "bench-results" / f"answers-{mechanism}-{int(time.time())}"
    raw = {"input": {"path": str(data)},
           "privacy": {"mechanism": mechanism, "epsilon": args.epsilon, "delta": args.delta, "max_units": args.rows},
           "queries": queries(args.queries, args.cols), "output": {"path": str(out_dir)}}
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    spec = ReleaseSpec.from_dict(raw)
    mech = construct(spec)
    times["plan_s"] = time.perf_counter() - t0  # report
    rng = default_source()
    t0 = time.perf_counter()
    df = spark.read.parquet(str(data))
    totals = mech.totals(SparkBackend(df, rng))
    times["spark_pass_s"] = time.perf_counter() - t0  # report
    t0 = time.perf_counter()
    if mechanism == "bounded_noise":
        mech.noise()  # the table build, timed apart from the draws
    times["noise_table_s"] = time.perf_counter() - t0  # report
    t0 = time.perf_counter()
    answers = mech.answer_totals(totals, rng)
    payload = mech.payload(answers)
    times["noise_and_postprocess_s"] = time.perf_counter() - t0  # report
    t0 = time.perf_counter()
    path = write_release(spec, payload, rng.name, mech.release_kind, utc_now())
    times["write_s"] = time.perf_counter() - t0  # report
    t0 = time.perf_counter()
    rel = open_release(path)
    rel.verify()
    times["open_verify_s"] = time.perf_counter() - t0  # report
    scalars = scalars_of(mech.queries)
    worst_ratio, worst95, over95 = 0.0, 0.0, 0  # report
    for a, x, s in zip(answers, totals, scalars):
        err = abs(a["value"] - Fraction(x, 1 << s.scale_bits))
        b95 = a["bound95"]
        worst95 = max(worst95, float(err / b95))  # report
        over95 += err > b95
        if a["R"] is not None:
            assert err <= a["R"], "an answer outside its certified R"
            worst_ratio = max(worst_ratio, float(err / a["R"]))  # report
    return {
        "mechanism": mechanism, "rows": args.rows, "queries": args.queries, "k": mech.k, **times,
        "M": mech.law.parameters.get("M"), "sigma": mech.law.parameters.get("sigma"),
        "noise_abs_bound_units": mech.law.abs_bound, "noise_bound95_units": mech.law.bound95,
        "max_err_over_R": worst_ratio if mech.law.abs_bound is not None else None,
        "max_err_over_bound95": worst95, "answers_over_bound95": over95,
        "R_example_q0": str(answers[0]["R"]), "bound95_example_q0": str(answers[0]["bound95"]),
        "load": os.getloadavg()[0],  # report
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--cols", type=int, default=4)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--mechanism", default="both", choices=["bounded_noise", "gaussian", "both"])
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--delta", default="1e-6")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    data = ROOT / "bench-results" / f"answers-input-{args.rows}x{args.cols}.parquet"
    data.parent.mkdir(parents=True, exist_ok=True)
    if not data.exists():
        t0 = time.perf_counter()
        make_input(data, args.rows, args.cols)
        print(f"generated {data} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)  # report
    from dpspark.engine.spark.local import local_session

    spark = local_session("answers-bench", args.master)
    mechs = ["bounded_noise", "gaussian"] if args.mechanism == "both" else [args.mechanism]
    results = [run(m, args, data, spark) for m in mechs]
    spark.stop()
    keys = ["mechanism", "k", "plan_s", "spark_pass_s", "noise_table_s", "noise_and_postprocess_s", "write_s",
            "open_verify_s", "M", "sigma", "noise_abs_bound_units", "noise_bound95_units", "max_err_over_R",
            "max_err_over_bound95", "answers_over_bound95", "load"]
    for key in keys:
        cells = []
        for r in results:
            v = r[key]
            cells.append(f"{v:.3g}" if isinstance(v, float) else str(v))  # report
        print(f"{key:26s} " + "  ".join(f"{c:>14s}" for c in cells))
    out = Path(args.json) if args.json else ROOT / "bench-results" / "answers_spark.json"
    out.write_text(json.dumps({"uptime_load": os.getloadavg(), "results": results}, indent=1))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
