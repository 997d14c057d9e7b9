#!/usr/bin/env python3
"""Compile CPU of each dpspark.gf kernel from an empty numba cache (issue 35 §1): which kernels a compact
build compiles, and what each costs.

Usage: .venv/bin/python scripts/bench/compile_profile.py [--part build|lookup] [--out bench-results/compile_profile]

Runs :func:`dpspark.gf.warmup.compile_build` (or ``compile_lookup``) in a fresh process with NUMBA_CACHE_DIR a
new temporary directory, and listens to numba's ``numba:compile`` events: each compiled function's CPU
seconds, without (``self``) and with (``total``) the functions it compiled on the way. Prints the table and
the process's total CPU and wall, with the 1-minute load; writes ``<out>/compile_profile.json``. Timing
figures only (floats are reports).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, sys, time
from numba.core import event

stack, own, total = [], {}, {}


class Listener(event.Listener):
    def on_start(self, ev):
        stack.append([ev.data["dispatcher"].py_func.__qualname__, time.process_time(), 0.0])

    def on_end(self, ev):
        name, t0, inner = stack.pop()
        took = time.process_time() - t0  # report
        own[name] = own.get(name, 0.0) + took - inner
        total[name] = total.get(name, 0.0) + took
        if stack:
            stack[-1][2] += took


event.register("numba:compile", Listener())
c0, w0 = time.process_time(), time.perf_counter()
from dpspark.gf import warmup
getattr(warmup, "compile_" + sys.argv[1])()
print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
                  "kernels": {k: [own[k], total[k]] for k in own}}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("build", "lookup"), default="build")
    ap.add_argument("--out", default="bench-results/compile_profile")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="dpspark-numba-") as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": cache}
        done = subprocess.run([sys.executable, "-c", PROBE, args.part], env=env, capture_output=True, text=True,
                              cwd=ROOT)
    if done.returncode:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(part=args.part, load1=round(load, 2))
    print(f"{'self s':>7s} {'total s':>8s}  function")
    for name, (own, total) in sorted(result["kernels"].items(), key=lambda kv: -kv[1][0]):
        print(f"{own:7.2f} {total:8.2f}  {name}")
    print(f"compile_{args.part}: {result['cpu_s']:.1f} CPU s, {result['wall_s']:.1f} s wall, load {load:.2f}")
    (out / "compile_profile.json").write_text(json.dumps(result, indent=2))
    print(f"wrote {out / 'compile_profile.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
