"""The ``dpspark budget DATASET`` command: show (and optionally set) a dataset's privacy budget.

The ledger path comes from ``--ledger``, else the ``DPSPARK_LEDGER`` environment
variable, else ``dpspark-ledger.sqlite`` in the current directory. Showing a
budget never creates a ledger; ``--total`` does (it is the operator's act of
configuring the budget).

Changing a total, up or down, is only ever done here (``--total``, with
``--allow-increase`` to raise it): a release config's ``total_epsilon`` /
``total_delta`` only set a missing total and must otherwise match.

Example::

    dpspark budget warehouse.queries --ledger ledger.sqlite --total 4 --delta-total 1e-6
"""

from __future__ import annotations

import argparse
import os
import sys
from fractions import Fraction
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the ledger (sqlite) loads when the command runs, not when any dpspark command starts
    from dpspark.ledger import LedgerSummary

DEFAULT_LEDGER = "dpspark-ledger.sqlite"
LEDGER_ENV = "DPSPARK_LEDGER"


def ledger_path(explicit: str | None) -> str:
    """The ledger file to use: ``--ledger``, else $DPSPARK_LEDGER, else ./dpspark-ledger.sqlite."""
    return explicit or os.environ.get(LEDGER_ENV) or DEFAULT_LEDGER


def _approx(x: Fraction) -> str:
    return f"{float(x):.6g}"  # report


def format_summary(summary: LedgerSummary, path: str) -> str:
    """Human-readable budget report: every release, then spent and left (exact, with float approximations)."""
    from dpspark.ledger import unit_words

    lines = [f"dataset   {summary.dataset_id}", f"ledger    {path}"]
    if summary.total is None:
        lines.append("total     (not configured: every spend is refused; set one with --total)")
    else:
        lines.append(f"total     epsilon = {summary.total.epsilon} (~{_approx(summary.total.epsilon)}), delta = {summary.total.delta}")
    lines.append("unit      " + (unit_words(summary.unit) if summary.unit else "(not pinned yet: the first spend pins it)"))
    lines.append("")
    lines.append(f"{'id':>5}  {'created (UTC)':<27}  {'status':<8}  {'epsilon':>12}  {'delta':>12}  {'mechanism':<20}  release")
    for r in summary.releases:
        lines.append(
            f"{r.id:>5}  {r.created_at:<27}  {r.status:<8}  {str(r.epsilon):>12}  {str(r.delta):>12}  "
            f"{r.mechanism:<20}  {r.release_path}"
        )
    if not summary.releases:
        lines.append("  (no releases)")
    lines.append("")
    lines.append(
        f"spent     epsilon = {summary.spent.epsilon} (~{_approx(summary.spent.epsilon)}), delta = {summary.spent.delta}"
        "   (basic composition, failed releases included)"
    )
    if summary.remaining is not None:
        eps_left, delta_left = summary.remaining.epsilon, summary.remaining.delta
        over = " (OVERSPENT: the total was lowered below what is spent)" if eps_left < 0 or delta_left < 0 else ""
        lines.append(f"left      epsilon = {eps_left} (~{_approx(eps_left)}), delta = {delta_left}{over}")
    return "\n".join(lines)


def _cmd_budget(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Show the dataset's releases and remaining budget; with --total, configure the total first."""
    from dpspark.ledger import Ledger, LedgerError

    stream = out if out is not None else sys.stdout
    path = ledger_path(args.ledger)
    try:
        if args.total is not None:
            ledger = Ledger(path, create=True)
            current = ledger.total(args.dataset)
            delta = args.delta_total if args.delta_total is not None else (current.delta if current else "0")
            ledger.set_total(args.dataset, args.total, delta, allow_increase=args.allow_increase)
        else:
            ledger = Ledger(path, read_only=True)
        summary = ledger.summary(args.dataset)
    except LedgerError as err:
        print(f"dpspark budget: error: {err}", file=sys.stderr)
        return 2
    print(format_summary(summary, path), file=stream)
    return 0


def add_budget_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``dpspark budget DATASET [--ledger PATH] [--total EPS]`` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "budget",
        help="show a dataset's spent and remaining privacy budget; --total sets or changes it",
        description="Show a dataset's releases, spent and remaining privacy budget (exact); with --total, set or "
        "change the dataset's total first (the only way to change a total).",
        epilog="examples:\n  dpspark budget warehouse.queries --ledger ledger.sqlite\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --total 4 --delta-total 1/1000000\n"
        "  dpspark budget warehouse.queries --ledger ledger.sqlite --total 6 --allow-increase",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dataset", help="the declared dataset id (as in the release config)")
    p.add_argument("--ledger", default=None, help=f"ledger file (default ${LEDGER_ENV} or ./{DEFAULT_LEDGER})")
    p.add_argument("--total", default=None, help='set the total epsilon budget first, exact (e.g. "1" or "1/2")')
    p.add_argument("--delta-total", default=None, help='with --total: the total delta, exact (default: keep, or 0)')
    p.add_argument("--allow-increase", action="store_true", help="with --total: allow raising an existing total (lowering needs no flag)")
    p.set_defaults(func=_cmd_budget)
