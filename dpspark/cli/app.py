"""The ``dpspark`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, Sequence

from dpspark import __version__
from dpspark.cli.common import READ_COMMANDS, without_pandas
from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.engine.progress import StderrProgress


def _cmd_mechanism(args: argparse.Namespace) -> int:
    """Show a counting mechanism's exact parameters and draw noisy counts for given true counts."""
    from dpspark.noise import FastSample, GeoSample
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
        from dpspark.text import readable  # [userfix] no number longer than 20 digits

        print(f"gamma, t*      {readable(mech.gamma)}, {desc['t']}")
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
    """Validate a config, then run the release: on Arrow for a local file, else on Spark (embedded local,
    Spark Connect, or the active spark-submit session)."""
    from dpspark.engine.progress import StderrProgress

    # [userfix] the clock starts before Spark: JVM start-up shows as progress; the heartbeat keeps it talking
    with StderrProgress() as progress:
        return _release(args, progress)


def _release(args: argparse.Namespace, progress: "StderrProgress") -> int:
    from dpspark.api.config import ConfigError, load_config
    from dpspark.engine.runner import plan_release

    progress(f"checking {args.config}")
    cfg = load_config(args.config, output=args.output, certify=False)  # the plan certifies it, once
    on_spark = bool(args.use_active_spark or args.remote or args.master)
    if args.engine == "arrow" and on_spark:
        raise ConfigError("--engine arrow runs on this machine without Spark; drop --master/--remote")
    # every config error surfaces before Spark starts: the mechanism is built and certified once, here
    plan = plan_release(cfg, engine="spark" if on_spark else args.engine, have_spark=on_spark)
    if plan.engine == "arrow" and "pandas" not in sys.modules:
        # an Arrow release hands pyarrow no pandas object, yet `import pyarrow.dataset` imports pandas (about
        # 0.7-1.2 s of a cold release's 2-3 s): the rest of this release runs without it, as the read commands do
        with without_pandas():
            return _checked_release(args, cfg, plan, progress)
    return _checked_release(args, cfg, plan, progress)


def _checked_release(args: argparse.Namespace, cfg: Any, plan: Any, progress: "StderrProgress") -> int:
    """The data-free checks, the charge and the run of a planned release (:func:`_release`)."""
    from dpspark.api.charge import Charge
    from dpspark.engine.runner import run_release

    signer = None
    if args.sign:  # the key is loaded before anything is spent; the writer signs inside the atomic directory
        from dpspark.release.signature import load_private_key

        signer = load_private_key(args.sign)
    charge = Charge(principal=args.principal)
    if args.dry_run:
        print(plan.text)
        plan.check()  # a failing check (existing output, exhausted budget, ...) exits non-zero
        charge.check(plan)  # the ledger's exact charge, for this principal
        print("checks           all data-free checks pass; nothing was read and nothing was spent")
        return 0
    plan.check(create_parent=True)  # output path and budget: refused before any Spark session starts
    charge.check(plan)  # the ledger's exact charge (rho, the principal's limit), before Spark starts
    spark = remote = None
    if plan.engine == "arrow":
        pass  # a local file without --master/--remote: pyarrow on this machine, no JVM
    elif args.use_active_spark:
        from dpspark.engine.spark.java import ensure_java_home

        ensure_java_home()
        from dpspark.engine.spark.local import active_session, started_session

        spark = started_session(progress, "Spark", lambda: active_session("dpspark-release"))
    elif args.remote:
        from dpspark.engine.spark.remote import remote_session

        spark = remote = remote_session(args.remote)
    elif args.master:
        from dpspark.engine.runner import job_spark_conf
        from dpspark.engine.spark.local import local_session, started_session

        spark = started_session(progress, "local Spark", lambda: local_session(
            "dpspark-release", args.master, conf=job_spark_conf(cfg)))
    from dpspark.release.signature import signing

    try:
        with signing(signer):
            out = run_release(plan, spark=spark, progress=progress, charge=charge,
                              show_data_errors=args.show_data_errors)
    finally:
        if remote is not None:
            remote.stop()  # releases the server-side session and its uploaded artifacts
    print(out)
    return 0


def _sub(sub: "argparse._SubParsersAction[argparse.ArgumentParser]", name: str, summary: str,
         example: str) -> argparse.ArgumentParser:
    """A subcommand whose --help starts with a one-line description and ends with an example (or several lines)."""
    label = "examples" if "\n" in example else "example"
    return sub.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".",
                          epilog=f"{label}:\n  " + example.replace("\n", "\n  "),
                          formatter_class=argparse.RawDescriptionHelpFormatter)


#: what ``dpspark --help`` says dpspark is (every family, both engines)
DESCRIPTION = ("Exact differentially private releases (histograms, answers, samples, learned distributions, "
               "grouped aggregates) on Arrow or Spark, and the tools to read, verify and budget them.")
#: ``dpspark release``'s one line: any mechanism; Arrow is the default for a local file
RELEASE_SUMMARY = ("run a release of any mechanism from a TOML config (on this machine with Arrow for a local file, "
                   "the default; on Spark with --engine spark, --master, --remote or spark-submit)")
RELEASE_EXAMPLES = (
    "dpspark release --config conf/product_learner.toml             # a local file: Arrow, no JVM\n"
    "dpspark release --config conf/queries-stability.toml --dry-run # the plan; nothing read or spent\n"
    "dpspark release --config conf/gaussian_learner.toml --master local[4]   # embedded local Spark"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dpspark`` command."""
    parser = argparse.ArgumentParser(prog="dpspark", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"dpspark {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    mech = _sub(sub, "mechanism", "show a counting mechanism and draw a few noisy counts",
                'dpspark mechanism --n 1000 --epsilon 1/2 --count 0 --count 10')
    mech.add_argument("--n", type=int, required=True, help="public bound on any count")
    mech.add_argument("--epsilon", required=True, help='exact epsilon, e.g. "1/10" (paper convention: eps~ <= eps/2)')
    mech.add_argument("--gamma", default=None, help='FastSample mixture weight 1/g, e.g. "2^-70"; omit for GeoSample')
    mech.add_argument("--beta", default="1/20", help="failure probability of the error bar (default 1/20)")
    mech.add_argument("--rule", default="pq", choices=["pq", "pow2"], help="how e^eps~ = p/q is chosen")
    mech.add_argument("--count", type=int, action="append", default=None, help="a true count (repeatable)")
    mech.set_defaults(func=_cmd_mechanism)

    rel = _sub(sub, "release", RELEASE_SUMMARY, RELEASE_EXAMPLES)
    rel.add_argument("--config", required=True, help="release config (see conf/)")
    rel.add_argument("--output", default=None,
                     help="the release directory (instead of the config's [output] path; missing parent folders are created)")
    where = rel.add_mutually_exclusive_group()
    where.add_argument("--master", default=None,
                       help="run on an embedded local Spark session with this master, e.g. local[4] "
                            "(--engine spark alone uses local[*])")
    where.add_argument(
        "--remote", default=None, metavar="sc://HOST:PORT",
        help="run the Spark side on a Spark Connect server (needs dpspark[connect]); noise is drawn here",
    )
    rel.add_argument(
        "--engine", choices=["arrow", "spark"], default=None,
        help="arrow: read and count with pyarrow on this machine, no JVM (the default for a local file without "
             "--master/--remote); spark: an embedded local Spark session (the default for a catalog table or "
             "object storage, and for the few mechanisms Arrow cannot run)",
    )
    rel.add_argument("--dry-run", action="store_true",
                     help="validate the config and show the plan (passes, privacy, error bars); read no data, spend nothing")
    rel.add_argument("--sign", default=None, metavar="KEYFILE",
                     help="sign the release's manifest with this Ed25519 private key (PEM; dpspark keygen)")
    rel.add_argument(
        "--show-data-errors", action="store_true",
        help="if the data pass fails, show the original error (it can quote rows of the data: for the data's "
             "curator only); by default a fixed, value-free error is shown and the spend stays",
    )
    rel.add_argument("--principal", default=None, metavar="NAME",
                     help="the analyst the ledger charges this release to (default $DPSPARK_PRINCIPAL; see "
                          "dpspark budget --principal)")
    rel.add_argument("--use-active-spark", action="store_true", help=argparse.SUPPRESS)  # spark-submit entry point
    rel.set_defaults(func=_cmd_release)
    from dpspark.cli.sql import add_sql_command

    add_sql_command(sub, _sub)
    try:
        from dpspark.cli.lookup import add_release_commands
    except ImportError:  # pragma: no cover - the lookup commands ship with dpspark.release
        pass
    else:
        add_release_commands(sub)
    from dpspark.cli.budget import add_budget_commands

    add_budget_commands(sub)
    from dpspark.cli.calibrate import add_calibrate_commands

    add_calibrate_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpspark`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "count", ()) is None:
        args.count = [0, 1, 10]
    try:
        if args.command in READ_COMMANDS:  # a lookup starts in a fraction of a second: pyarrow without pandas
            with without_pandas():
                return int(args.func(args))
        return int(args.func(args))
    except DPSparkError as err:  # only user-facing errors: a programming bug surfaces as a traceback
        print(f"dpspark {args.command}: error: {err}", file=sys.stderr)
        for note in getattr(err, "__notes__", ()):  # e.g. that a failed release's budget stays spent
            print(f"dpspark {args.command}: {note}", file=sys.stderr)
        if getattr(args, "show_data_errors", False) and err.__cause__ is not None:  # the curator opted in
            print(f"dpspark {args.command}: the data pass's original error (--show-data-errors): "
                  f"{type(err.__cause__).__name__}: {err.__cause__}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
