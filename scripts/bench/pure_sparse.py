"""Benchmark PureSparseHistogram at |X| = 2^64, eps = 1, beta = 1/20 (add/remove neighbours).

Usage: .venv/bin/python scripts/bench/pure_sparse.py [--n 100 1000 10000] [--exact-up-to 300] [--seed 1] [--progress]
       [--base DIR [--base-n 100000 1000000]]

Prints a table (n, mode, s_bits, wall seconds, CPU seconds, released bins, accuracy
figures, fallbacks of the adaptive comparisons, the longest wall-clock gap between
progress lines, 1-minute load average) and writes bench-results/pure_sparse.json. The mechanism is
FastSample with e^{eps~} <= e^1 (pq rule), gamma_F = 2^-72 (< beta2/|X| so the
simultaneous bound is meaningful), mixing gamma = beta/3. The dataset is a
deterministic Zipf-like spread of n units over pseudo-random 64-bit indices.
For n <= --exact-up-to the exact mode is run too and must give an identical
release under the same SeededRandom (docs/balcer-vadhan-notes.md §E11).

``--base DIR`` (an export of another commit, e.g. ``git archive main | tar -x -C DIR``) runs the same
adaptive rows there too, one child process per n with DIR on PYTHONPATH, checks the releases are
identical, and prints each tree's CPU exponent (the slope of log CPU s against log n, first to last row).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import os
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path

from dpspark.noise import FastSample, choose_exp_eps
from dpspark.mechanisms.histogram import pure_sparse_histogram
from dpspark.rng import SeededRandom

UNIVERSE = 1 << 64
EPSILON = Fraction(1)
BETA = Fraction(1, 20)
GAMMA = BETA / 3
GAMMA_F = Fraction(1, 1 << 72)


def dataset(n: int) -> dict[int, int]:
    """n units: bin i gets max(1, n // (4 (i+1))) until the total reaches n."""
    out: dict[int, int] = {}
    total, i = 0, 0
    while total < n:
        c = min(max(1, n // (4 * (i + 1))), n - total)
        out[(i * 0x9E3779B97F4A7C15 + 12345) % UNIVERSE] = c
        total += c
        i += 1
    return out


def run(
    n: int, mode: str, seed: int, show_progress: bool = False
) -> tuple[dict[str, object], tuple[tuple[int, ...], tuple[int, ...]]]:
    """One release; returns (figures, released partial vector)."""
    t0 = time.perf_counter()
    mech = FastSample(n=n, exp_eps=choose_exp_eps(2 * EPSILON), gamma=GAMMA_F)
    t1 = time.perf_counter()
    c1 = time.process_time()
    stats: dict[str, int] = {}
    stamps = [t1]  # report: wall-clock time of each progress line, for the longest silent gap

    def progress(msg: str) -> None:
        stamps.append(time.perf_counter())
        if show_progress:
            print(f"  [{stamps[-1] - t1:8.2f} s] {msg}", file=sys.stderr, flush=True)  # report

    rel = pure_sparse_histogram(
        dataset(n), UNIVERSE, n, mech, GAMMA, SeededRandom(seed), beta=BETA, mode=mode, stats=stats, progress=progress
    )
    t2 = time.perf_counter()
    c2 = time.process_time()
    stamps.append(t2)
    acc = rel.accuracy
    figures: dict[str, object] = {
        "n": n,
        "mode": mode,
        "seed": seed,
        "mechanism_setup_s": round(t1 - t0, 3),  # report
        "release_s": round(t2 - t1, 3),  # report
        "release_cpu_s": round(c2 - c1, 3),  # report
        "s_bits": rel.parameters["s_bits"],
        "fastsample_t": mech.t,
        "released_bins": len(rel.indices),
        "a_per_query": acc.a_per_query,
        "per_query_on_counts_above": acc.per_query_above,
        "a_simultaneous": acc.a_simultaneous,
        "epsilon_float": rel.privacy.epsilon_float(),  # report
        "levels_decided_by_cdf_bounds": stats.get("decided", 0),
        "cdf_bound_fallbacks": stats.get("cdf_fallback", 0),
        "comparisons_exact_fallback": stats.get("exact", 0),
        "progress_lines": len(stamps) - 2,
        "max_progress_gap_s": round(max(b - a for a, b in zip(stamps, stamps[1:])), 3),  # report
        "load_avg_1min": round(os.getloadavg()[0], 2),  # report
        "release_sha256": hashlib.sha256(repr((rel.indices, rel.counts)).encode()).hexdigest(),
    }
    return figures, (rel.indices, rel.counts)


def exponent(rows: list[dict[str, object]]) -> float | None:
    """Slope of log(CPU s) against log(n) from the first to the last row (None with fewer than two n)."""
    if len(rows) < 2 or rows[0]["n"] == rows[-1]["n"]:
        return None
    cpu0, cpu1 = float(rows[0]["release_cpu_s"]), float(rows[-1]["release_cpu_s"])  # type: ignore[arg-type]  # report
    n0, n1 = int(rows[0]["n"]), int(rows[-1]["n"])  # type: ignore[call-overload]
    return round(math.log(cpu1 / cpu0) / math.log(n1 / n0), 3)  # report


def run_base(base: Path, n: int, seed: int) -> dict[str, object]:
    """One adaptive row of this script with another tree's dpspark: a child process with that tree on PYTHONPATH."""
    out = base / "bench-results" / f"pure_sparse_base_{n}.json"
    env = dict(os.environ, PYTHONPATH=str(base))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--n", str(n), "--exact-up-to", "0", "--seed", str(seed), "--out", str(out)]
    subprocess.run(cmd, cwd=base, env=env, check=True, stdout=subprocess.DEVNULL)
    row = json.loads(out.read_text())["rows"][0]
    row["tree"] = "base"
    return row


def print_row(fig: dict[str, object], tree: str) -> None:
    """One table line."""
    fallbacks = int(fig["cdf_bound_fallbacks"]) + int(fig["comparisons_exact_fallback"])  # type: ignore[call-overload]
    print(
        f"{tree:>5} {fig['n']:>8} {fig['mode']:>8} {fig['s_bits']:>10} {fig['release_s']:>9.2f} {fig['release_cpu_s']:>9.2f} "
        f"{fig['released_bins']:>6} {fig['a_per_query']:>5} {fig['per_query_on_counts_above']:>6} {fig['a_simultaneous']:>6} "
        f"{fallbacks:>6} {fig['max_progress_gap_s']:>9.2f} {fig['load_avg_1min']:>5.1f}",
        flush=True,
    )


def main() -> None:
    """Run the table, print it, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--exact-up-to", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="bench-results/pure_sparse.json")
    parser.add_argument("--progress", action="store_true", help="print the release's progress lines (stderr)")
    parser.add_argument("--base", type=Path, help="another tree (an export of a commit) to run the adaptive rows in too")
    parser.add_argument("--base-n", type=int, nargs="+", help="the n to run in --base (default: --n)")
    args = parser.parse_args()
    rows = []
    base_rows: list[dict[str, object]] = []
    header = (
        f"{'tree':>5} {'n':>8} {'mode':>8} {'s_bits':>10} {'wall_s':>9} {'cpu_s':>9} {'bins':>6} {'a_pq':>5} {'above':>6} "
        f"{'a_sim':>6} {'fallbk':>6} {'max_gap_s':>9} {'load':>5}"
    )
    print(header)
    for n in args.n:
        modes = ["adaptive"] + (["exact"] if n <= args.exact_up_to else [])
        outputs = []
        for mode in modes:
            fig, out = run(n, mode, args.seed, args.progress)
            outputs.append(out)
            rows.append(fig)
            print_row(fig, "this")
        if len(outputs) == 2 and outputs[0] != outputs[1]:
            raise SystemExit(f"adaptive and exact releases differ at n = {n}")
        if len(outputs) == 2:
            rows[-1]["identical_to_adaptive"] = True
        if args.base is not None and n in (args.base_n or args.n):
            base_rows.append(run_base(args.base.resolve(), n, args.seed))
            print_row(base_rows[-1], "base")
            if base_rows[-1]["release_sha256"] != rows[-len(modes)]["release_sha256"]:
                raise SystemExit(f"this tree's and the base's releases differ at n = {n}")
    adaptive = [r for r in rows if r["mode"] == "adaptive"]
    print(f"CPU exponent, first to last n: this tree {exponent(adaptive)}, base {exponent(base_rows)}")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "universe_size_log2": 64,
        "epsilon": str(EPSILON),
        "beta": str(BETA),
        "gamma": str(GAMMA),
        "gamma_F": "2^-72",
        "neighbours": "add/remove one unit, at most n units",
        "machine": platform.platform(),
        "python": platform.python_version(),
        "cpu_exponent": exponent(adaptive),
        "base": str(args.base) if args.base is not None else None,
        "base_cpu_exponent": exponent(base_rows),
    }
    path.write_text(json.dumps({"meta": meta, "rows": rows, "base_rows": base_rows}, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
