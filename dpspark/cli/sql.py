"""``dpspark sql "<query>"``: run a DP SQL query (docs/sql.md) on local files or, with --engine spark, on Spark.

The query and the ``--table``/``--public`` files become the ``[sql]`` config form
(:mod:`dpspark.api.config.sql`), which runs as every release does: checked and planned before Spark
starts, charged before the data pass, written atomically. ``--explain`` prints the plan (budget split,
bounds, noise, error bars at beta, keys) and reads and spends nothing.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

SUMMARY = "run a DP SQL query (SELECT WITH DIFFERENTIAL_PRIVACY ...) on local files, or on Spark"
EXAMPLES = (
    "dpspark sql \"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = "
    "user_id) region, COUNT(*) AS n FROM m GROUP BY region\" --table m=demo-output/measurements.parquet "
    "--output releases/sql --explain"
)


def _named(values: list[str] | None, what: str) -> dict[str, str]:
    from dpspark.engine.spec import ConfigError

    out: dict[str, str] = {}
    for item in values or ():
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"{what} takes NAME=PATH, got {item!r}")
        if name in out:
            raise ConfigError(f"{what} names table {name!r} twice")
        out[name] = str(Path(path).resolve())
    return out


def sql_config(args: argparse.Namespace) -> dict[str, Any]:
    """The ``[sql]`` config of the command's arguments."""
    from dpspark.engine.spec import ConfigError

    private, public = _named(args.table, "--table"), _named(args.public, "--public")
    both = sorted(set(private) & set(public))
    if both:
        raise ConfigError(f"table {both[0]!r} is given as --table and --public")
    tables: dict[str, Any] = {n: {"path": p} for n, p in private.items()}
    tables.update({n: {"path": p, "public": True} for n, p in public.items()})
    output = args.output or str(Path(tempfile.mkdtemp(prefix="dpspark-sql-")) / "release")
    sql = {"query": args.query, **({"max_units": args.max_units} if args.max_units is not None else {})}
    raw: dict[str, Any] = {"sql": sql, "tables": tables,
                           "output": {"path": str(Path(output).resolve())}}
    if args.ledger is not None:
        raw["budget"] = {"ledger": str(Path(args.ledger).resolve()), "dataset": args.dataset}
    return raw


def _cmd_sql(args: argparse.Namespace) -> int:
    from dpspark.api.charge import Charge
    from dpspark.api.config import parse_config
    from dpspark.engine.progress import StderrProgress
    from dpspark.engine.runner import plan_release, run_release
    from dpspark.engine.spec import ConfigError

    if args.output is None and not args.explain:
        raise ConfigError("give --output DIR (the release folder), or --explain to see the plan")
    with StderrProgress() as progress:
        cfg = parse_config(sql_config(args), Path.cwd() / "<sql>", certify=False)
        on_spark = args.engine == "spark" or args.master is not None
        plan = plan_release(cfg, engine="spark" if on_spark else args.engine, have_spark=on_spark)
        if args.explain:
            print(plan.text)
            print("checks           the query compiles; nothing was read and nothing was spent")
            return 0
        plan.check(create_parent=True)
        charge = Charge()
        charge.check(plan)  # the ledger's exact charge (rho, the principal's limits), before Spark starts
        spark = None
        if plan.engine != "arrow":
            from dpspark.engine.spark.local import local_session, started_session

            spark = started_session(progress, "local Spark",
                                    lambda: local_session("dpspark-sql", args.master or "local[*]"))
        out = run_release(plan, spark=spark, progress=progress, charge=charge)
    print(out)
    return 0


def add_sql_command(sub: Any, make: Any) -> None:
    """Register ``dpspark sql`` (``make``: the app's subcommand factory)."""
    p = make(sub, "sql", SUMMARY, EXAMPLES)
    p.add_argument("query", help="the query: SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) ... (docs/sql.md)")
    p.add_argument("--table", action="append", metavar="NAME=PATH",
                   help="a private table (a Parquet, CSV, ORC or JSON file); repeatable: the first is the one the "
                        "query reads FROM, the others (Parquet) share its unit and JOIN it on the unit column")
    p.add_argument("--public", action="append", metavar="NAME=PATH",
                   help="a public table: JOIN it, or list the keys with OPTIONS (keys = NAME); repeatable")
    p.add_argument("--max-units", type=int, default=None,
                   help="n: public bound on the number of privacy units (optional: without it the release states "
                        "add/remove of one unit with no limit on the number of units)")
    p.add_argument("--output", default=None, help="the release folder")
    p.add_argument("--explain", action="store_true",
                   help="print the plan (budget split, bounds, noise, error bars, keys); read and spend nothing")
    p.add_argument("--engine", choices=["arrow", "spark"], default=None,
                   help="arrow (default for a local file) or spark")
    p.add_argument("--master", default=None, help="run on an embedded local Spark with this master, e.g. local[2]")
    p.add_argument("--ledger", default=None, help="charge this privacy-budget ledger too (with --dataset)")
    p.add_argument("--dataset", default=None, help="the ledger's dataset id (default: the private tables' names, sorted, joined by '+')")
    p.set_defaults(func=_cmd_sql)
