"""Before/after of the certified bounded-noise calibrations and the Bernoulli sampler's zCDP rho (issue 23, section 3).

One command: ``PYTHONPATH=. .venv/bin/python scripts/bench/bounded_calibration.py [--base REV] [--quick]``.
"Before" is the calibration module of ``--base`` (default: the redesign commit this work started from), loaded
from ``git show`` into a temporary module, so both are measured in the same run on the same machine. Prints a
table and writes bench-results/bounded_calibration.json. Floats here are reporting only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dpspark.noise import bounded_calibrate as new  # noqa: E402
from dpspark.mechanisms.samplers import bernoulli as B  # noqa: E402

BASE = "0be9fe5"
SMALL = [(1, "1", "1e-3"), (1, "1/2", "1e-6"), (1, "1/10", "1e-10"), (2, "1", "1e-3"), (2, "1/2", "1e-6"),
         (3, "1", "1e-3"), (3, "1", "1e-6"), (10, "1", "1e-6")]
FIG1 = [(100, "1/10", "1e-10")]


def load_old(rev: str):
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:dpspark/noise/bounded_calibrate.py"],
                         check=True, capture_output=True, text=True).stdout
    d = tempfile.mkdtemp()
    path = os.path.join(d, "old_bounded_calibrate.py")
    Path(path).write_text(src)
    spec = importlib.util.spec_from_file_location("old_bounded_calibrate", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_bounded_calibrate"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def scale(k: int, eps: str, delta: str) -> float:
    return math.sqrt(k * math.log(1 / float(Fraction(delta)))) / float(Fraction(eps))  # report


def timed(fn, *a, **kw):
    t = time.time()
    try:
        out = fn(*a, **kw)
    except Exception as e:  # report: a refused method is a table entry
        out = e
    return out, time.time() - t


def exact_min(k: int, eps: str, delta: str, M: int, bits: int) -> int | None:
    if k > 3:
        return None
    sys.path.insert(0, str(ROOT))
    from tests.unit.noise.test_bounded_exact_kfold import exact_minimum_M

    return exact_minimum_M("p2", bits, k, Fraction(eps), Fraction(delta), M)


def levels_table(ks: list[int], eps: str = "1", delta: str = "1e-6") -> None:
    """PLD with level-dependent grids at the Chernoff M: does its certificate meet delta there (then the PLD
    search can only lower M), and what does one certificate cost."""
    from dpspark.noise.bounded import BoundedNoise
    from dpspark.noise.bounded_pld import MAX_LEN, pld_delta

    rows = []
    for k in ks:
        ch, t_ch = timed(new.calibrate, k, eps, delta)
        noise = BoundedNoise(ch.M, ch.family, ch.bits)
        pd, t_pd = timed(pld_delta, noise, k, Fraction(eps))
        row = {"k": k, "epsilon": eps, "delta": delta, "chernoff_M": ch.M, "chernoff_path": ch.path,
               "chernoff_cert": float(ch.certified_delta), "pld_cert_at_chernoff_M": float(pd),  # report
               "max_len": MAX_LEN, "secs": {"chernoff": t_ch, "pld_delta": t_pd}, "loadavg": os.getloadavg()}
        rows.append(row)
        print(f"k={k:>8} M_chernoff={ch.M:>6} ({ch.path}) cert {float(ch.certified_delta):.3e}  "
              f"PLD(levels) at that M {float(pd):.3e} ({t_pd:.1f}s)  load {os.getloadavg()[0]:.1f}", flush=True)
    out = ROOT / "bench-results" / "bounded_calibration_levels.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"levels": rows}, indent=1))
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=BASE)
    ap.add_argument("--quick", action="store_true", help="skip the k = 100 PLD searches (about 2 min)")
    ap.add_argument("--levels", default="", help="only the level-grid PLD table at these k (comma list, e.g. "
                    "100,1000,10000): Chernoff M, the PLD certificate at that M and its time (eps=1, delta=1e-6)")
    args = ap.parse_args()
    if args.levels:
        levels_table([int(x) for x in args.levels.split(",")])
        return
    old = load_old(args.base)
    rows = []
    for k, e, d in SMALL + FIG1:
        pld = not (args.quick and k >= 100)
        ob, t_ob = timed(old.calibrate, k, e, d)
        nb, t_nb = timed(new.calibrate, k, e, d)
        op, t_op = timed(old.calibrate, k, e, d, method="pld") if pld else (None, 0.0)
        np_, t_np = timed(new.calibrate, k, e, d, method="pld") if pld else (None, 0.0)
        ex = exact_min(k, e, d, nb.M, nb.bits)
        sc = scale(k, e, d)
        M = lambda c: getattr(c, "M", None)  # noqa: E731
        row = {"k": k, "epsilon": e, "delta": d, "exact_min_M": ex,
               "before_default_M": M(ob), "after_default_M": M(nb), "after_path": nb.path,
               "before_pld_M": M(op), "after_pld_M": M(np_),
               "before_best_R_over_scale": min(x - 1 for x in (M(ob), M(op)) if x) / sc,
               "after_best_R_over_scale": min(x - 1 for x in (M(nb), M(np_)) if x) / sc,
               "secs": {"before_default": t_ob, "after_default": t_nb, "before_pld": t_op, "after_pld": t_np}}
        rows.append(row)
        print(f"k={k:>4} eps={e:>5} delta={d:>6}  exact {ex!s:>5}  default {M(ob)!s:>5} -> {M(nb)!s:>5} "
              f"({nb.path}, {t_nb:.1f}s)  pld {M(op)!s:>5} -> {M(np_)!s:>5} ({t_np:.1f}s)  "
              f"ratio to exact {'' if ex is None else f'{M(ob) / ex:.2f} -> {M(nb) / ex:.2f}'}  "
              f"best R/scale {row['before_best_R_over_scale']:.3f} -> {row['after_best_R_over_scale']:.3f}",
              flush=True)
    from dpspark.privacy import LogEpsilon, PureDP, pure_to_zcdp
    from dpspark.rng import DEFAULT_LAMBDA, bias_epsilon

    rho_rows = []
    for n in (100, 1000, 10**4, 10**6):
        before = pure_to_zcdp(PureDP(LogEpsilon(B.column_ratio(n), bias_epsilon(B.column_bias_draws(n), DEFAULT_LAMBDA)))).rho
        after, t = timed(B.column_rho, n, DEFAULT_LAMBDA)
        rho_rows.append({"n": n, "before_rho": float(before), "after_rho": float(after), "secs": t})  # report
        print(f"bernoulli column n={n:>8}: rho {float(before):.4e} -> {float(after):.4e} "
              f"({float(before / after):.2f}x lower, {t:.2f}s)")
    out = ROOT / "bench-results" / "bounded_calibration.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"base": args.base, "calibrations": rows, "bernoulli_rho": rho_rows,
                               "loadavg": os.getloadavg()}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
