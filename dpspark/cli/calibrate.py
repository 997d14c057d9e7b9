"""The ``dpspark calibrate bounded-noise`` command: certified M for k queries, next to the Gaussian baseline.

Only JSON goes to stdout; diagnostics go to stderr. The bounded-noise numbers are
certified (dpspark.noise.bounded_calibrate; docs/bounded-noise.md); the Gaussian
numbers are float reports (Balle-Wang 2018 analytic calibration) for comparison.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, TextIO

from dpspark.exact import parse_rational

#: Failure probabilities of the Gaussian max-error quantiles in the report.
GAUSS_BETAS = ("0.5", "0.05", "0.001", "1e-06")


def _int_arg(text: str) -> int:
    """An exact positive integer, also written as 1e10 or 10^10."""
    value = parse_rational(text, "k")
    if value.denominator != 1 or value < 1:
        raise argparse.ArgumentTypeError(f"k must be a positive integer, got {text!r}")
    return int(value)


def bounded_noise_report(
    k: int, epsilon: str, delta: str, family: str = "p2", method: str = "chernoff", sensitivity: int = 1
) -> dict[str, Any]:
    """The JSON report of ``dpspark calibrate bounded-noise`` (exact fields as strings/ints, ratios as floats)."""
    from dpspark.noise.bounded_calibrate import calibrate
    from dpspark.noise.gaussian_compare import gaussian_max_error, gaussian_sigma

    t0 = time.perf_counter()
    cal = calibrate(k, epsilon, delta, sensitivity=sensitivity, family=family, method=method)
    secs = time.perf_counter() - t0
    eps_f, delta_f = float(cal.epsilon), float(cal.delta)  # report
    log_inv_delta = math.log(cal.delta.denominator) - math.log(cal.delta.numerator)  # report
    scale = sensitivity * math.sqrt(k * log_inv_delta) / eps_f  # report
    sigma = sensitivity * gaussian_sigma(k, eps_f, delta_f)  # report
    return {
        "mechanism": "bounded_noise",
        "k": k,
        "epsilon": str(cal.epsilon),
        "delta": str(cal.delta),
        "family": cal.family,
        "method": cal.method,
        "sensitivity": sensitivity,
        "M": cal.M,
        "bits": cal.bits,
        "certified_delta": str(cal.certified_delta),
        "certificate_path": cal.path,
        "R": cal.R,
        "bounded95": cal.bound95,
        "grid": cal.grid,
        "tabulable": cal.tabulable,  # False: M > 2^24 with a 1-unit sensitivity (certified, but no sampling table)
        "scale": scale,  # report: sensitivity * sqrt(k ln(1/delta)) / epsilon
        "R_over_scale": cal.grid * cal.M / scale,  # report: M for Delta = 1; grid * M (answer units) on a grid
        "bounded95_over_scale": cal.bound95 / scale,  # report
        "gaussian_sigma_over_scale": sigma / scale,  # report
        "gaussian_max_error_over_scale": {b: gaussian_max_error(sigma, k, float(b)) / scale for b in GAUSS_BETAS},  # report
        "seconds": round(secs, 3),  # report
        "notes": list(cal.notes),
    }


def _cmd_calibrate_bounded(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print the JSON report; diagnostics on stderr."""
    stream = out if out is not None else sys.stdout
    print(f"dpspark calibrate: certifying k={args.k} epsilon={args.epsilon} delta={args.delta} "
          f"family={args.family} method={args.method}", file=sys.stderr)
    report = bounded_noise_report(args.k, args.epsilon, args.delta, args.family, args.method, args.sensitivity)
    print(f"dpspark calibrate: M = {report['M']} ({report['certificate_path']} certificate, "
          f"{report['seconds']} s)", file=sys.stderr)
    for note in report.pop("notes", []):
        print(f"dpspark calibrate: note: {note}", file=sys.stderr)
    json.dump(report, stream, indent=1)
    stream.write("\n")
    return 0


def choose_report(epsilon: str, delta: str, k: int | None = None, max_units: int = 10**6,
                  family: str = "p2") -> dict[str, Any]:
    """The JSON report of ``dpspark calibrate choose``: the crossing k, and both bars (certified) at it and at k."""
    from dpspark.mechanisms.answers.choice import compare, crossing_k
    from dpspark.noise.bounded_calibrate import calibrate

    def certified(at: int) -> dict[str, Any]:
        cal = calibrate(at, epsilon, delta, sensitivity=1, family=family)
        return compare(at, epsilon, delta, max_units=max_units, family=family, bounded_M=cal.M).describe()

    t0 = time.perf_counter()
    cross = crossing_k(epsilon, delta, max_units=max_units, family=family)
    report: dict[str, Any] = {
        "epsilon": epsilon, "delta": delta, "max_units": max_units, "family": family,
        "crossing_k": cross,
        "rule": ("bounded_noise's probability-1 bound R is at most the gaussian's simultaneous 95% bound from "
                 "k = crossing_k on (two significant digits; found with the float model of the Chernoff "
                 "certificate); below it, gaussian has the smaller bar but no probability-1 bound"),
        "at_crossing": None if cross is None else certified(cross),
    }
    if k is not None:
        report["at_k"] = certified(k)
    report["seconds"] = round(time.perf_counter() - t0, 3)  # report
    return report


def _cmd_calibrate_choose(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print the crossing k and the comparison as JSON; one line in words on stderr."""
    stream = out if out is not None else sys.stdout
    report = choose_report(args.epsilon, args.delta, args.k, args.max_units, args.family)
    cross = report["crossing_k"]
    print("dpspark calibrate: " + ("bounded_noise is not ahead up to k = 10^9" if cross is None else
          f"bounded_noise's always-bound is below the gaussian's 95% bound from k = {cross} on"), file=sys.stderr)
    if "at_k" in report:
        a = report["at_k"]
        print(f"dpspark calibrate: at k = {a['k']}: bounded_noise +-{a['bounded_noise_R']} always, gaussian "
              f"+-{a['gaussian_bound95']} with probability 0.95 (grid units): pick {a['smaller']}", file=sys.stderr)
    json.dump(report, stream, indent=1)
    stream.write("\n")
    return 0


def add_calibrate_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``dpspark calibrate bounded-noise --k K --epsilon E --delta D [...]``."""
    example = "dpspark calibrate bounded-noise --k 1000000 --epsilon 1/10 --delta 1e-10"
    cal = subparsers.add_parser(
        "calibrate", help="certified noise calibration tools",
        description="Certified noise calibration tools (JSON on stdout, diagnostics on stderr).",
        epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
    which = cal.add_subparsers(dest="calibrate_what", required=True)
    b = which.add_parser(
        "bounded-noise", help="smallest certified M of the Dagan-Kur bounded noise (JSON on stdout)",
        description="The smallest certified M of the Dagan-Kur bounded noise, as JSON on stdout.",
        epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("--k", type=_int_arg, required=True, help="number of (adaptive) queries, e.g. 1000000 or 1e6")
    b.add_argument("--epsilon", required=True, help='exact epsilon, e.g. "0.1" or "1/10"')
    b.add_argument("--delta", required=True, help='exact delta, e.g. "1e-10"')
    b.add_argument("--family", default="p2", choices=["p1", "p2"], help="f_p(x) = (1-x^2)^-p (default p2)")
    b.add_argument("--method", default="chernoff", choices=["chernoff", "pld"], help="certifier (default chernoff)")
    b.add_argument("--sensitivity", type=int, default=1, help="integer query sensitivity (default 1)")
    b.set_defaults(func=_cmd_calibrate_bounded)
    choose_example = "dpspark calibrate choose --epsilon 1 --delta 1e-6 --k 100"
    c = which.add_parser(
        "choose", help="bounded_noise or gaussian answers: the k from which bounded noise has the smaller bar",
        description=("The least k (two significant digits) from which bounded_noise's probability-1 bound is at "
                     "most the gaussian answers' simultaneous 95% bound, and both bars (certified) there and at "
                     "--k. JSON on stdout."),
        epilog=f"example:\n  {choose_example}", formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--epsilon", required=True, help='exact epsilon, e.g. "1" or "1/10"')
    c.add_argument("--delta", required=True, help='exact delta, e.g. "1e-6"')
    c.add_argument("--k", type=_int_arg, default=None, help="also compare at this number of answers")
    c.add_argument("--max-units", type=_int_arg, default=10**6,
                   help="the release's max_units (the gaussian's window; default 10^6)")
    c.add_argument("--family", default="p2", choices=["p1", "p2"], help="bounded noise family (default p2)")
    c.set_defaults(func=_cmd_calibrate_choose)
