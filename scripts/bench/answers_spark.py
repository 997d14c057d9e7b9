#!/usr/bin/env python3
"""Bench: an ``answers`` release of 10^4 clipped sums over 10^7 rows on Spark, stage by stage; or, with
``--filtered``, k overlapping filtered sums on both engines and both Spark plans (issue 24 §2).

Usage: python scripts/bench/answers_spark.py [--rows 10000000] [--queries 10000] [--cols 4]
       [--master local[2]] [--mechanism bounded_noise|gaussian|both] [--json out.json]
       python scripts/bench/answers_spark.py --filtered [--rows 1000000] [--ks 10,100,300,1000]
       [--legacy-ks 10,30] [--units 100000] [--repeats 1] [--json out.json]

``--filtered``: the input (v0..v3 in [0, 1), y in [0, 100), u in [0, --units)) is generated once under
bench-results/. Query j sums v_{j mod 4} clipped to [0, (1 + j mod 997) / 997] at scale 2^10 where
``y BETWEEN a_j AND b_j`` (a_j = j mod 70, b_j = a_j + 20 + j mod 17: overlapping, distinct filters). Timed,
in one run and one Spark session (after an unrecorded warm-up pass): the data pass (exact totals) on the
Arrow engine, on Spark as Arrow partitions (the new plan), and on Spark's column-per-scalar plan (the old
plan, one generated column per scalar; only at --legacy-ks, since it passes the JVM's 64 KB method limit
near k = 100 and then takes minutes). Every plan's totals are checked identical. With --units > 0 the
same is timed with unit_column = u. Prints a table (medians of --repeats runs) and writes JSON.

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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dpspark.mechanisms.registry import construct  # noqa: E402


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


def make_filtered_input(path: Path, rows: int, units: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(23)  # synthetic input only
    writer = None
    for start in range(0, rows, 250_000):
        n = min(250_000, rows - start)
        t = pa.table({**{f"v{c}": rng.random(n) for c in range(4)}, "y": rng.random(n) * 100,
                      "u": rng.integers(0, max(units, 1), n)})
        writer = writer or pq.ParquetWriter(str(path), t.schema)
        writer.write_table(t)
    writer.close()


def filtered_queries(k: int) -> list[dict]:
    out = []
    for j in range(k):
        a = j % 70
        out.append({"name": f"q{j}", "kind": "sum", "column": f"v{j % 4}", "lo": "0",
                    "hi": str(Fraction(1 + j % 997, 997)), "scale_bits": 10,
                    "filter": f"y BETWEEN {a} AND {a + 20 + j % 17}"})
    return out


def filtered_main(args: argparse.Namespace) -> int:
    """k overlapping filtered sums: Arrow engine, Spark Arrow partitions, Spark column plan; one run."""
    import statistics

    import pyarrow.dataset as ds

    from dpspark.engine.spark.local import local_session
    from dpspark.mechanisms.answers.arrow_kernel import scalar_totals_arrow
    from dpspark.mechanisms.answers.queries import parse_queries, scalars_of
    from dpspark.mechanisms.answers.spark_kernel import column_totals, scalar_totals

    rows = args.rows if args.rows != 10_000_000 else 1_000_000  # this mode's default: 10^6 rows
    data = ROOT / "bench-results" / f"filtered-input-{rows}-{args.units}.parquet"
    data.parent.mkdir(parents=True, exist_ok=True)
    if not data.exists():
        make_filtered_input(data, rows, args.units)
    ks = [int(k) for k in args.ks.split(",")]
    legacy = {int(k) for k in args.legacy_ks.split(",") if k}
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    spark = local_session("answers-filtered-bench", args.master)
    start_s = time.perf_counter() - t0  # report
    df = spark.read.parquet(str(data))
    dataset = ds.dataset(str(data))
    scalar_totals(df, scalars_of(parse_queries(filtered_queries(10))), None, rows)  # warm-up (JVM, workers)

    def timed(fn):  # type: ignore[no-untyped-def]
        times, out = [], None
        for _ in range(args.repeats):
            t = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t)  # report
        return statistics.median(times), out

    results = []
    units = [None] + (["u"] if args.units else [])
    for unit in units:
        for k in ks:
            scalars = scalars_of(parse_queries(filtered_queries(k)))
            row: dict = {"k": k, "unit_column": unit, "rows": rows, "units": args.units if unit else rows}
            row["arrow_s"], a = timed(lambda: scalar_totals_arrow(dataset, scalars, unit))
            row["spark_arrow_partitions_s"], b = timed(lambda: scalar_totals(df, scalars, unit, rows))
            same = a == b
            if k in legacy:
                row["spark_column_plan_s"], c = timed(lambda: column_totals(df, scalars, unit, rows))
                same = same and b == c
            row["identical"] = same
            row["load"] = os.getloadavg()[0]  # report
            results.append(row)
            print(f"k={k:>5} unit={unit or '-':>2}  arrow {row['arrow_s']:7.2f} s   spark (Arrow partitions) "
                  f"{row['spark_arrow_partitions_s']:7.2f} s   spark (column plan) "
                  f"{row.get('spark_column_plan_s', float('nan')):7.2f} s   identical {same}   load {row['load']:.1f}",
                  flush=True)
    spark.stop()
    print(f"\n{rows} rows; Spark {args.master}, session start {start_s:.1f} s (excluded); medians of {args.repeats}")
    print(f"{'k':>6} {'unit':>5} {'arrow s':>9} {'spark new s':>12} {'spark old s':>12} {'old/new':>8} {'same':>5}")
    for r in results:
        old = r.get("spark_column_plan_s")
        ratio = f"{old / r['spark_arrow_partitions_s']:8.1f}" if old else f"{'-':>8}"
        print(f"{r['k']:>6} {r['unit_column'] or '-':>5} {r['arrow_s']:>9.2f} {r['spark_arrow_partitions_s']:>12.2f} "
              f"{old if old is not None else float('nan'):>12.2f} {ratio} {str(r['identical']):>5}")
    load_end = os.getloadavg()
    print(f"load average: start {' '.join(f'{x:.2f}' for x in load_start)}, end {' '.join(f'{x:.2f}' for x in load_end)}")
    out = Path(args.json) if args.json else ROOT / "bench-results" / "answers_filtered.json"
    out.write_text(json.dumps({"bench": "answers_filtered", "master": args.master, "rows": rows, "ks": ks,
                               "legacy_ks": sorted(legacy), "repeats": args.repeats, "session_start_s": start_s,
                               "load_average_start": load_start, "load_average_end": load_end,
                               "cpus": os.cpu_count(), "results": results}, indent=1))
    print(f"wrote {out}", file=sys.stderr)
    return 0 if all(r["identical"] for r in results) else 1


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
    ap.add_argument("--filtered", action="store_true", help="k overlapping filtered sums on both engines (§2)")
    ap.add_argument("--ks", default="10,100,300,1000", help="--filtered: numbers of sums")
    ap.add_argument("--legacy-ks", default="10,30", help="--filtered: k at which to time Spark's column plan too")
    ap.add_argument("--units", type=int, default=0, help="--filtered: also time with a unit column of this many units")
    ap.add_argument("--repeats", type=int, default=1, help="--filtered: timed runs per cell (median)")
    args = ap.parse_args(argv)
    if args.filtered:
        return filtered_main(args)
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
