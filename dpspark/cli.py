"""The ``dpspark`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Sequence

from dpspark import __version__


def _cmd_mechanism(args: argparse.Namespace) -> int:
    """Show a counting mechanism's exact parameters and draw noisy counts for given true counts."""
    from dpspark.counting import FastSample, GeoSample
    from dpspark.rng import bias_epsilon, default_source

    t0 = time.perf_counter()
    if args.gamma is None:
        mech = GeoSample(n=args.n, epsilon=args.epsilon, rule=args.rule)
    else:
        mech = FastSample(n=args.n, epsilon=args.epsilon, gamma=args.gamma, rule=args.rule)
    setup = time.perf_counter() - t0
    desc = mech.describe()
    a = mech.accuracy(args.beta)
    rng = default_source()
    print(f"mechanism      {mech.name}" + (" (fell back to GeoSample: t* >= n)" if desc.get("fallback") else ""))
    print(f"n              {mech.n}")
    print(f"e^eps~ = p/q   {mech.exp_eps}   (eps~ = {mech.epsilon_tilde:.6f}, requested eps = {args.epsilon})")  # report
    if "t" in desc:
        print(f"gamma, t*      {desc['gamma']}, {desc['t']}")
    print(f"d              {mech.d.bit_length()} bits")
    print(f"error bar      +-{a} with probability >= 1 - {args.beta} (exact, worst case over the true count)")
    print(f"privacy        {mech.epsilon_tilde:.6f}-DP per count, exactly e^eps~ = {mech.exp_eps}; "  # report
          f"plus at most {float(bias_epsilon(1, rng.lam)):.1e} for the 2^-{rng.lam} draw bias")  # report
    print(f"setup          {setup * 1000:.1f} ms")
    print()
    print(f"{'true count':>12}  {'noisy count':>12}  {'error bar':>10}  {'time':>9}")
    for c in args.count:
        t0 = time.perf_counter()
        z = mech.draw(c, rng)
        dt = time.perf_counter() - t0
        print(f"{c:>12}  {z:>12}  {'+-' + str(a):>10}  {dt * 1e6:>7.0f}us")
    return 0


def _cmd_release(args: argparse.Namespace) -> int:
    """Validate a config, then run the release job on Spark (embedded local, or the active spark-submit session)."""
    from dpspark.config import load_config
    from dpspark.job import describe_plan, run_release, stderr_progress

    cfg = load_config(args.config, output=args.output)  # every config error surfaces before Spark starts
    if args.dry_run:
        import json

        print(json.dumps(describe_plan(cfg), indent=1, default=str))
        return 0
    from dpspark.release import check_output_path

    cfg.output.parent.mkdir(parents=True, exist_ok=True)
    check_output_path(cfg.output)  # refuse an existing release before any Spark session starts
    spark = remote = None
    if args.use_active_spark:
        from dpspark.spark.java import ensure_java_home

        ensure_java_home()
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("dpspark-release").getOrCreate()
    elif args.remote:
        from dpspark.spark.remote import remote_session

        spark = remote = remote_session(args.remote)
    elif args.master:
        from dpspark.spark.session import local_session

        from dpspark.job import job_spark_conf

        spark = local_session("dpspark-release", args.master, conf=job_spark_conf(cfg))
    try:
        out = run_release(cfg, spark=spark, progress=stderr_progress())
    finally:
        if remote is not None:
            remote.stop()  # releases the server-side session and its uploaded artifacts
    print(out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dpspark`` command."""
    parser = argparse.ArgumentParser(prog="dpspark", description="Exact differentially private histogram releases.")
    parser.add_argument("--version", action="version", version=f"dpspark {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    mech = sub.add_parser("mechanism", help="show a counting mechanism and draw a few noisy counts")
    mech.add_argument("--n", type=int, required=True, help="public bound on any count")
    mech.add_argument("--epsilon", required=True, help='exact epsilon, e.g. "1/10" (paper convention: eps~ <= eps/2)')
    mech.add_argument("--gamma", default=None, help='FastSample mixture weight 1/g, e.g. "2^-70"; omit for GeoSample')
    mech.add_argument("--beta", default="1/20", help="failure probability of the error bar (default 1/20)")
    mech.add_argument("--rule", default="pq", choices=["pq", "pow2"], help="how e^eps~ = p/q is chosen")
    mech.add_argument("--count", type=int, action="append", default=None, help="a true count (repeatable)")
    mech.set_defaults(func=_cmd_mechanism)

    rel = sub.add_parser("release", help="run a release job from a TOML config on an embedded local Spark")
    rel.add_argument("--config", required=True, help="release config (see conf/)")
    rel.add_argument("--output", default=None, help="override [output] path")
    where = rel.add_mutually_exclusive_group()
    where.add_argument("--master", default=None, help="local Spark master for the embedded session (default local[*])")
    where.add_argument(
        "--remote", default=None, metavar="sc://HOST:PORT",
        help="run the Spark side on a Spark Connect server (needs dpspark[connect]); noise is drawn here",
    )
    rel.add_argument("--dry-run", action="store_true", help="validate the config and show the mechanism; read no data")
    rel.add_argument("--use-active-spark", action="store_true", help=argparse.SUPPRESS)  # spark-submit entry point
    rel.set_defaults(func=_cmd_release)
    try:
        from dpspark.cli_release import add_release_commands
    except ImportError:  # pragma: no cover - the lookup commands ship with dpspark.release
        pass
    else:
        add_release_commands(sub)
    from dpspark.cli_budget import add_budget_commands

    add_budget_commands(sub)
    from dpspark.cli_calibrate import add_calibrate_commands

    add_calibrate_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpspark`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "count", ()) is None:
        args.count = [0, 1, 10]
    try:
        return int(args.func(args))
    except (ValueError, TypeError, OSError, RuntimeError) as err:
        print(f"dpspark {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
