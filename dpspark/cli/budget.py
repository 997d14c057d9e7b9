"""The ``dpspark budget DATASET`` command: show (and optionally set) a dataset's privacy budget.

The ledger path comes from ``--ledger``, else the ``DPSPARK_LEDGER`` environment
variable, else ``dpspark-ledger.sqlite`` in the current directory. Showing a
budget never creates a ledger; setting anything does (it is the operator's act of
configuring the budget).

The operator's settings, each only ever changed here (or by the Python ``Ledger`` methods):

* ``--total EPS [--delta-total D]`` or ``--total-rho RHO [--delta-total D]``: the dataset's total, in
  (epsilon, delta) or in zCDP rho (``--delta-total`` then is the delta it is also shown at);
  ``--rule basic|zcdp [--share-epsilon E --share-delta D]``: the (epsilon, delta) total's admission filter
  (:mod:`dpspark.ledger.compose`; basic by default);
* ``--principal NAME --limit EPS [--delta-limit D]`` or ``--limit-rho RHO``: a principal's limit under it;
* ``--max-epsilon-per-query EPS [--max-delta-per-query D]`` or ``--max-rho-per-query RHO`` (``--no-query-limit``);
* ``--refresh monthly|none``: an opt-in refresh window (no guarantee across windows);
* ``--tables T1,T2``: tables that share the dataset's unit (:mod:`dpspark.ledger.tables`).

Raising a total or a limit, changing its form, or turning a refresh on needs ``--allow-increase``. A release
config's ``total_epsilon`` / ``total_delta`` only set a missing total and must otherwise match.
``--json`` prints the same report as exact strings for scripts.

Example::

    dpspark budget warehouse.queries --ledger ledger.sqlite --total 4 --delta-total 1e-6
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the ledger (sqlite) loads when the command runs, not when any dpspark command starts
    from dpspark.ledger import Budget, LedgerSummary

DEFAULT_LEDGER = "dpspark-ledger.sqlite"
LEDGER_ENV = "DPSPARK_LEDGER"
#: what each admission filter composes, in words (dpspark.ledger.compose)
RULE_WORDS = {
    "basic": "basic filter: every release's charged epsilon and delta summed (valid for adaptive choices)",
    "zcdp": ("zCDP filter: zCDP releases' rho and pure releases' eps^2/2 summed against the rho part, converted "
             "once (CKS20, certified upward); releases that do not fit there summed against the share "
             "(valid for adaptive choices: Renyi filter and concurrent composition)"),
}


def ledger_path(explicit: str | None) -> str:
    """The ledger file to use: ``--ledger``, else $DPSPARK_LEDGER, else ./dpspark-ledger.sqlite."""
    return explicit or os.environ.get(LEDGER_ENV) or DEFAULT_LEDGER


def _approx(x: Fraction) -> str:
    return f"{float(x):.6g}"  # report


def _amount(b: "Budget") -> str:
    """A total, limit or spend in words, exact with float approximations."""
    if b.rho is not None and b.epsilon == 0 and b.delta == 0:
        return f"rho = {b.rho} (~{_approx(b.rho)})"
    text = f"epsilon = {b.epsilon} (~{_approx(b.epsilon)}), delta = {b.delta}"
    if b.rho is not None:
        return f"rho = {b.rho} (~{_approx(b.rho)}); as (epsilon, delta): {text}"
    return text


def rho_left(remaining: "Budget | None") -> Fraction | None:
    """The rho a zCDP release can still spend in a filter's rho part (None: a basic filter has none)."""
    if remaining is None or remaining.rho is None:
        return None
    return max(remaining.rho, Fraction(0))


def _left_words(summary: "LedgerSummary") -> str:
    left = summary.remaining
    assert left is not None
    if summary.total is not None and summary.total.rho is not None and left.rho is not None:
        over = " (OVERSPENT)" if left.rho < 0 else ""
        return f"rho = {left.rho} (~{_approx(left.rho)}){over}"
    over = " (OVERSPENT: the total was lowered below what is spent)" if left.epsilon < 0 or left.delta < 0 else ""
    return (f"epsilon = {left.epsilon} (~{_approx(left.epsilon)}), delta = {left.delta}{over}   (epsilon at the "
            "total's delta; delta not yet spent by (epsilon, delta) releases)")


def report(summary: "LedgerSummary", path: str, with_rho_left: bool = True) -> dict[str, Any]:
    """The report as JSON-ready exact strings (``--json``); ``format_summary`` prints the same in words."""
    def amounts(b: "Budget | None") -> Any:
        if b is None:
            return None
        return {"epsilon": str(b.epsilon), "delta": str(b.delta), "rho": None if b.rho is None else str(b.rho)}

    counted = [r for r in summary.releases if summary.window_start is None or r.created_at >= summary.window_start]
    total = summary.total
    out: dict[str, Any] = {
        "dataset": summary.dataset_id, "ledger": path, "total": amounts(total),
        "total_declared_in": None if total is None else ("rho" if total.rho is not None else "epsilon"),
        "filter": None if total is None else {
            "rule": total.filter_rule,
            "rho_part": None if total.rho_cap is None else str(total.rho_cap),
            "basic_part": {"epsilon": str(total.basic_cap[0]), "delta": str(total.basic_cap[1])},
            "how": RULE_WORDS[total.filter_rule]},
        "unit": summary.unit, "per_query_limit": amounts(summary.query_limit), "refresh": summary.refresh,
        "window_start": summary.window_start, "tables": list(summary.tables),
        "spent": {**amounts(summary.spent), "rule": summary.rule, "how": RULE_WORDS.get(summary.rule, summary.rule)},
        "left": amounts(summary.remaining),
        "releases": [{"id": r.id, "created_at": r.created_at, "status": r.status, "epsilon": str(r.epsilon),
                      "delta": str(r.delta), "rho": None if r.rho is None else str(r.rho), "kind": r.entry.kind,
                      "principal": r.principal, "mechanism": r.mechanism, "release": r.release_path,
                      "release_id": r.release_id, "counted": r in counted} for r in summary.releases],
        "principals": [],
    }
    out["statement"] = _statement(summary, counted)
    if with_rho_left and summary.total is not None:
        got = rho_left(summary.remaining)
        out["left"]["rho_for_one_more_zcdp_release"] = None if got is None else str(got)
    for p in summary.principals:
        mine = rho_left(p.remaining) if p.limit is not None else rho_left(summary.remaining)
        item = {"principal": p.principal, "limit": amounts(p.limit), "spent": {**amounts(p.spent), "rule": p.rule},
                "left": amounts(p.remaining), "rho_left": None if mine is None else str(mine),
                "releases": p.releases}
        out["principals"].append(item)
    return out


def _statement(summary: "LedgerSummary", counted: list[Any]) -> dict[str, Any] | None:
    """The counted releases' composed statement at the total's delta (PLD where it is tighter), or None."""
    from dpspark.ledger.pld_statement import DISPLAY_BINS, statement, words

    total = summary.total
    if total is None or not counted or not 0 < total.delta < 1:
        return None
    st = statement([r.entry for r in counted], total.delta, max_bins=DISPLAY_BINS)
    if st is None:
        return None
    return {"epsilon": str(st.epsilon), "delta": str(st.delta), "method": st.method, "how": words(st),
            "pld_epsilon": None if st.pld_epsilon is None else str(st.pld_epsilon),
            "rules_epsilon": None if st.rules is None else str(st.rules.epsilon),
            "rules_rule": None if st.rules is None else st.rules.rule,
            "scope": "a statement for releases whose parameters were fixed in advance; admission is by the filter"}


def format_summary(summary: "LedgerSummary", path: str) -> str:
    """Human-readable budget report: settings, every release, then spent and left (exact, with approximations)."""
    from dpspark.ledger import unit_words

    data = report(summary, path)
    lines = [f"dataset   {summary.dataset_id}", f"ledger    {path}"]
    if summary.total is None:
        lines.append("total     (not configured: every spend is refused; set one with --total or --total-rho)")
    else:
        lines.append(f"total     {_amount(summary.total)}")
        t = summary.total
        if t.rho_cap is not None and t.rho is None:
            lines.append(f"filter    zcdp: rho part rho = {t.rho_cap} (~{_approx(t.rho_cap)}), share epsilon = "
                         f"{t.share[0]}, delta = {t.share[1]} (fixed when the total was declared)")
        elif t.rho is None:
            lines.append("filter    basic (charged epsilon and delta summed; --rule zcdp composes zCDP releases in rho)")
    if summary.tables:
        lines.append(f"tables    {', '.join(summary.tables)} (a charge to any of them, or to a '+'-join of them, is "
                     "charged here)")
    lines.append("unit      " + (unit_words(summary.unit) if summary.unit else "(not pinned yet: the first spend pins it)"))
    if summary.query_limit is not None:
        lines.append(f"per query {_amount(summary.query_limit)} at most")
    if summary.refresh:
        lines.append(f"refresh   {summary.refresh}: only spends since {summary.window_start} count (no guarantee "
                     "across windows: k windows of releases compose to k totals)")
    lines.append("")
    lines.append(f"{'id':>5}  {'created (UTC)':<27}  {'status':<8}  {'epsilon':>12}  {'delta':>12}  {'rho':>12}  "
                 f"{'principal':<10}  {'mechanism':<20}  release")
    for r in summary.releases:
        rho = "" if r.rho is None else str(r.rho)
        mark = "" if summary.window_start is None or r.created_at >= summary.window_start else "  (earlier window)"
        lines.append(
            f"{r.id:>5}  {r.created_at:<27}  {r.status:<8}  {str(r.epsilon):>12}  {str(r.delta):>12}  {rho:>12}  "
            f"{r.principal or '-':<10}  {r.mechanism:<20}  {r.release_path}{mark}"
        )
    if not summary.releases:
        lines.append("  (no releases)")
    lines.append("")
    spent = summary.spent
    if summary.total is not None and summary.total.rho is not None and spent.rho is not None:
        lines.append(f"spent     {_amount(spent)}")
        lines.append("          composed as zCDP: rho summed exactly, pure releases as eps^2/2 (failed releases included)")
    else:
        lines.append(f"spent     epsilon = {spent.epsilon} (~{_approx(spent.epsilon)}), delta = {spent.delta}"
                     + (f"; rho = {spent.rho} of it in zCDP" if spent.rho else "")
                     + "   (failed releases included)")
        lines.append(f"          composed by {RULE_WORDS.get(summary.rule, summary.rule)}")
    st = data.get("statement")
    if st is not None:
        e = Fraction(st["epsilon"])
        lines.append(f"statement epsilon = {e} (~{_approx(e)}) at delta = {st['delta']} by {st['method']}: {st['how']}")
        if st["rules_epsilon"] is not None and st["method"] == "pld":
            r = Fraction(st["rules_epsilon"])
            lines.append(f"          (least of rules: epsilon ~{_approx(r)}, {st['rules_rule']}); parameters fixed in "
                         "advance only: releases are admitted by the filter")
        else:
            lines.append("          parameters fixed in advance only: releases are admitted by the filter")
    if summary.remaining is not None:
        lines.append(f"left      {_left_words(summary)}")
        more = data["left"].get("rho_for_one_more_zcdp_release")
        if more is not None and summary.total is not None and summary.total.rho is None:
            lines.append(f"          rho left in the rho part = {Fraction(more)} (~{_approx(Fraction(more))})")
    if summary.principals:
        lines.append("")
        lines.append(f"{'principal':<16}  {'releases':>8}  {'limit':<44}  {'spent':<44}  {'left':<44}  rho left")
        for p, item in zip(summary.principals, data["principals"]):
            limit = "-" if p.limit is None else _amount(p.limit)
            left = "-" if p.remaining is None else (
                f"rho = {p.remaining.rho}" if p.limit is not None and p.limit.rho is not None else
                f"epsilon = {p.remaining.epsilon} (~{_approx(p.remaining.epsilon)}), delta = {p.remaining.delta}")
            rl = item["rho_left"]
            rl_text = "- (basic limit)" if rl is None else (
                f"{Fraction(rl)} (~{_approx(Fraction(rl))})" + ("" if p.limit is not None else " (dataset's)"))
            lines.append(f"{p.principal or '(unnamed)':<16}  {p.releases:>8}  {limit:<44}  {_amount(p.spent):<44}  "
                         f"{left:<44}  {rl_text}")
    return "\n".join(lines)


def _settings(args: argparse.Namespace, path: str) -> Any:
    """Apply the operator's settings named on the command line; returns the ledger (writable when one was set)."""
    from dpspark.ledger import Ledger

    writes = (args.total is not None or args.total_rho is not None or args.limit is not None
              or args.limit_rho is not None or args.max_epsilon_per_query is not None
              or args.max_rho_per_query is not None or args.no_query_limit or args.refresh is not None
              or args.tables is not None)
    if (args.rule is not None or args.share_epsilon is not None or args.share_delta is not None) and not (
            args.total is not None or args.limit is not None):
        from dpspark.errors import ParameterError

        raise ParameterError("--rule/--share-epsilon/--share-delta are declared with --total or --limit (the filter "
                             "is fixed when its total is declared)")
    if not writes:
        return Ledger(path, read_only=True)
    ledger = Ledger(path, create=True)
    ds = args.dataset
    if args.tables is not None:
        ledger.declare_tables(ds, [t.strip() for t in args.tables.split(",")])
    if args.total is not None or args.total_rho is not None:
        current = ledger.total(ds)
        delta = args.delta_total if args.delta_total is not None else (current.delta if current else "0")
        share = None
        if args.share_epsilon is not None or args.share_delta is not None:
            share = (args.share_epsilon or "0", args.share_delta or "0")
        ledger.set_total(ds, args.total, delta, rho_total=args.total_rho, rule=args.rule, share=share,
                         allow_increase=args.allow_increase)
    if args.limit is not None or args.limit_rho is not None:
        if args.principal is None:
            from dpspark.errors import ParameterError

            raise ParameterError("--limit/--limit-rho need --principal NAME")
        share = None
        if args.share_epsilon is not None or args.share_delta is not None:
            share = (args.share_epsilon or "0", args.share_delta or "0")
        ledger.set_principal_limit(ds, args.principal, args.limit, args.delta_limit or "0", rho=args.limit_rho,
                                   rule=args.rule, share=share, allow_increase=args.allow_increase)
    if args.no_query_limit:
        ledger.set_query_limit(ds)
    elif args.max_epsilon_per_query is not None or args.max_rho_per_query is not None:
        ledger.set_query_limit(ds, args.max_epsilon_per_query, args.max_delta_per_query or "0",
                               rho=args.max_rho_per_query)
    if args.refresh is not None:
        ledger.set_refresh(ds, None if args.refresh == "none" else args.refresh, allow_increase=args.allow_increase)
    return ledger


def _cmd_budget(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Show the dataset's releases and remaining budget; apply the operator's settings first."""
    from dpspark.errors import DPSparkError

    stream = out if out is not None else sys.stdout
    path = ledger_path(args.ledger)
    try:
        summary = _settings(args, path).summary(args.dataset)
    except DPSparkError as err:
        print(f"dpspark budget: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report(summary, path), indent=2), file=stream)
    else:
        print(format_summary(summary, path), file=stream)
    return 0


def add_budget_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``dpspark budget DATASET [--ledger PATH] [settings] [--json]`` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "budget",
        help="show a dataset's spent and remaining privacy budget (in total and per principal); set totals and limits",
        description="Show a dataset's releases, spent and remaining privacy budget (exact; admitted by the filter "
        "fixed with the total: basic, or zcdp with zCDP releases composed in rho and converted once; also stated "
        "by certified PLD where tighter), in total and per principal; with the flags below, set the total, a "
        "principal's limit, a per-query limit or a refresh window first (the only way to change them).",
        epilog="examples:\n  dpspark budget warehouse.queries --ledger ledger.sqlite\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --total 4 --delta-total 1/1000000\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --total-rho 1/2 --delta-total 1/1000000000\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --total 2 --delta-total 1/1000000000 --rule zcdp\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --principal alice --limit 1 --delta-limit 1/10000000\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --max-epsilon-per-query 1/2\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --total 6 --allow-increase\n"
        "  dpspark budget shop --ledger ledger.sqlite --tables orders,users\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dataset", help="the declared dataset id (as in the release config)")
    p.add_argument("--ledger", default=None, help=f"ledger file (default ${LEDGER_ENV} or ./{DEFAULT_LEDGER})")
    total = p.add_mutually_exclusive_group()
    total.add_argument("--total", default=None, help='set the total epsilon budget first, exact (e.g. "1" or "1/2")')
    total.add_argument("--total-rho", default=None, help='set the total as zCDP rho instead, exact (e.g. "1/2")')
    p.add_argument("--delta-total", default=None,
                   help="with --total: the total delta, exact (default: keep, or 0); with --total-rho: the delta at "
                        "which the rho total is also shown in (epsilon, delta)")
    p.add_argument("--rule", choices=["basic", "zcdp"], default=None,
                   help="with --total (or --limit): the admission filter, fixed at declaration: basic (default; charged epsilon "
                        "and delta summed) or zcdp (zCDP and pure releases in rho against the rho part the total "
                        "converts to; others against the share)")
    p.add_argument("--share-epsilon", default=None, help="with --rule zcdp: epsilon kept for releases composed "
                   "basically ((epsilon, delta > 0) releases), exact (default 0)")
    p.add_argument("--share-delta", default=None, help="with --rule zcdp: delta kept for them (default 0)")
    p.add_argument("--principal", default=None, metavar="NAME", help="with --limit/--limit-rho: the analyst")
    limit = p.add_mutually_exclusive_group()
    limit.add_argument("--limit", default=None, help="set --principal's epsilon limit under the total, exact")
    limit.add_argument("--limit-rho", default=None, help="set --principal's limit in zCDP rho, exact")
    p.add_argument("--delta-limit", default=None, help="with --limit: the principal's delta limit (default 0)")
    query = p.add_mutually_exclusive_group()
    query.add_argument("--max-epsilon-per-query", default=None, help="cap every later release's charged epsilon")
    query.add_argument("--max-rho-per-query", default=None, help="cap every later release's rho (pure: eps^2/2)")
    query.add_argument("--no-query-limit", action="store_true", help="remove the per-query cap")
    p.add_argument("--max-delta-per-query", default=None, help="with --max-epsilon-per-query: the delta cap (default 0)")
    p.add_argument("--refresh", choices=["monthly", "none"], default=None,
                   help="monthly: only the current UTC month's spends count (like Clean Rooms; no guarantee across "
                        "months: k months compose to k totals; needs --allow-increase); none: every spend counts")
    p.add_argument("--tables", default=None, metavar="T1,T2",
                   help="declare tables that share this dataset's unit: a charge to any of them, or to a '+'-join "
                        "of them (orders+users), is charged to this dataset (a table belongs to one dataset)")
    p.add_argument("--allow-increase", action="store_true",
                   help="allow raising a total or limit, changing its form, or turning a refresh on")
    p.add_argument("--json", action="store_true", help="print the report as JSON (exact strings) for scripts")
    p.set_defaults(func=_cmd_budget)
