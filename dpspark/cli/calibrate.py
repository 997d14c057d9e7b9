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
