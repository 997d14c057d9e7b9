"""The groups stage on Spark, this tree against a baseline git ref, in one run (issue 22: Spark end to end).

Usage:
    .venv/bin/python scripts/bench/spark_groups.py [--rows 1000000] [--users 200000] [--baseline-ref main]
        [--repeats 3] [--cases public private rows-cut] [--out bench-results/spark-groups.json]

Input: scripts/gen_measurements.py's table (``--rows``, ``--users``), generated into a temporary folder.
Cases, each a :class:`GroupsStage` computed by ``groups_spark`` on ``spark.read.parquet``:

* public: the stage of conf/groups-public-keys.toml (5 aggregates over 4 public regions, units, k = 2, c = 3);
* private: the stage of conf/groups-private-keys.toml (count and mean per age, an int_range universe);
* rows-cut: the public stage without a unit column and ``max_units`` = rows / 2 (the row truncation).

Each side runs in child processes with their own ``local[2]`` Spark session (the baseline's ``dpspark`` is
``git archive``-d into a temporary folder and put first on the children's PYTHONPATH, workers included);
the sides alternate, ``--repeats`` children each; a child runs every case once untimed (JVM and Python
worker warm-up), then once timed. Both sides must give identical statistics (sha256 of their repr). The
table gives the median wall seconds per side, the ratio baseline / this tree and the load average before
each child. Floats here are timing reports only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from abtree import extract, run_child  # scripts/bench/abtree.py: the A/B benches' shared part

ROOT = Path(__file__).resolve().parents[2]
CASES = ("public", "private", "rows-cut")


def _stage(case: str, data: Path, rows: int) -> Any:
    import dataclasses

    from dpspark.api.config import load_config
    from dpspark.engine.plan import build_mechanism

    conf = ROOT / "conf" / ("groups-private-keys.toml" if case == "private" else "groups-public-keys.toml")
    text = conf.read_text(encoding="utf-8").replace('"../demo-output/measurements.parquet"', json.dumps(str(data)))
    tmp = data.parent / f"{case}.toml"
    tmp.write_text(text, encoding="utf-8")
    stage = build_mechanism(load_config(tmp, certify=False)).stage()
    if case == "rows-cut":
        stage = dataclasses.replace(stage, unit_column=None, max_units=rows // 2, max_groups_per_unit=1,
                                    max_rows_per_group=1)
    return stage


def child(data: Path, rows: int, cases: list[str]) -> dict[str, Any]:
    """One side's timings (run in a child process whose PYTHONPATH names the side's tree)."""
    import hashlib

    from dpspark.engine.spark.local import local_session
    from dpspark.mechanisms.groups.spark_stats import groups_spark

    spark = local_session("bench-spark-groups", "local[2]")
    df = spark.read.parquet(str(data))
    secret = bytes(range(16))
    out: dict[str, Any] = {}
    for case in cases:
        stage = _stage(case, data, rows)
        groups_spark(df, stage, secret)  # warm-up: JIT, Python workers
        t0 = time.perf_counter()
        got = groups_spark(df, stage, secret)
        wall = time.perf_counter() - t0  # report
        out[case] = {"seconds": wall, "groups": len(got), "sha256": hashlib.sha256(repr(got).encode()).hexdigest()}
    spark.stop()
    return out


def _run_child(tree: Path, data: Path, rows: int, cases: list[str]) -> dict[str, Any]:
    java = {} if "JAVA_HOME" in os.environ else {"JAVA_HOME": "/usr/lib/jvm/java-17-openjdk-amd64"}
    return run_child(__file__, tree, [str(data), "--rows", str(rows), "--cases", *cases],
                     env_extra={"PYSPARK_PYTHON": sys.executable, **java}, timeout=3600)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--baseline-ref", default="main")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--out", default="bench-results/spark-groups.json")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.child), args.rows, args.cases)))
        return 0
    with tempfile.TemporaryDirectory(prefix="spark-groups-") as tmp_:
        tmp = Path(tmp_)
        data = tmp / "measurements.parquet"
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_measurements.py"), str(data), "--rows",
                        str(args.rows), "--users", str(args.users)], check=True, stdout=subprocess.DEVNULL)
        base = tmp / "baseline"
        base.mkdir()
        extract(args.baseline_ref, base, ("dpspark", "conf", "scripts"))
        runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this tree": []}
        loads: list[float] = []
        for _ in range(args.repeats):
            for side, tree in (("baseline", base), ("this tree", ROOT)):
                loads.append(os.getloadavg()[0])  # report
                runs[side].append(_run_child(tree, data, args.rows, args.cases))
    rows_out = []
    print(f"groups stage on Spark (local[2]), {args.rows} rows, {args.users} users; "
          f"baseline {args.baseline_ref}; {args.repeats} children per side; load {min(loads):.1f}-{max(loads):.1f}")
    print(f"{'case':10} {'groups':>7} {'baseline s':>11} {'this tree s':>12} {'ratio':>6}  identical")
    for case in args.cases:
        b = statistics.median(r[case]["seconds"] for r in runs["baseline"])  # report
        t = statistics.median(r[case]["seconds"] for r in runs["this tree"])  # report
        same = len({r[case]["sha256"] for side in runs.values() for r in side}) == 1
        rows_out.append({"case": case, "groups": runs["this tree"][0][case]["groups"], "baseline_s": b,
                         "this_tree_s": t, "ratio": b / t, "identical": same})
        print(f"{case:10} {rows_out[-1]['groups']:>7} {b:>11.1f} {t:>12.1f} {b / t:>6.2f}  {same}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": args.rows, "users": args.users, "baseline_ref": args.baseline_ref,
                               "repeats": args.repeats, "load": loads, "cases": rows_out, "runs": runs}, indent=1))
    if not all(r["identical"] for r in rows_out):
        print("the two sides disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
