"""The ``dpspark lookup`` command: noisy counts of keys with their error bars (see :data:`KEY_SYNTAX`).

:func:`add_release_commands` registers the read-side commands, one module each: ``lookup`` (here),
``inspect`` (:mod:`dpspark.cli.inspect`), ``plot`` (:mod:`dpspark.cli.plot`), ``verify``
(:mod:`dpspark.cli.verify`), ``keygen`` (:mod:`dpspark.cli.keygen`) and ``sign`` (:mod:`dpspark.cli.sign`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from dpspark.cli.common import NO_VERIFY_HELP, command_parser
from dpspark.cli.common import fail as _fail
from dpspark.errors import DPSparkError, ParameterError
from dpspark.lookup.display import format_table, safe_text

if TYPE_CHECKING:  # dpspark.universe costs 0.3-0.9 s to import: every `dpspark` command builds this parser
    from dpspark.universe import Universe


def __getattr__(name: str) -> Any:
    """``split_tuple_key`` (part of this module's interface), imported on first use."""
    if name == "split_tuple_key":
        from dpspark.universe.keytext import split_tuple_key

        return split_tuple_key
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


KEY_SYNTAX = """\
key syntax (parsed per the release's universe):
  int_range, integer categorical / hashed(int) keys: decimal integers
  string, string categorical, hashed(string) keys:   the text as given
  bytes and hashed(bytes) keys:                      the UTF-8 bytes of the text
  tuple keys: components separated by commas; write \\, for a comma inside a
  component and \\\\ for a backslash.
  With --key-json each KEY is JSON instead: a number or string for scalar
  universes, a list for tuples, and {"hex": "00ff"} for arbitrary bytes.
"""



def parse_key(universe: "Universe", text: str, as_json: bool = False) -> Any:
    """A KEY argument as a key of ``universe`` (see :data:`KEY_SYNTAX`)."""
    if as_json:
        try:
            value = json.loads(text)
        except ValueError:
            raise ParameterError("--key-json: a KEY is not valid JSON") from None
        return universe.parse_json(value)
    return universe.parse_text(text)


# ---- universe and file descriptions -------------------------------------------------------------


# ---- lookup ------------------------------------------------------------------------------------------


def _cmd_lookup(args: argparse.Namespace) -> int:
    """Answer every valid key; mark each invalid one by its position (never echoing it); exit 1 if any was invalid.

    A valid key a private selection did not release is answered as such (exit 0). An answers release is looked
    up by query name (no name: every answer).
    """
    from dpspark.lookup import open_release

    try:
        rel = open_release(args.release, verify=not args.no_verify)
    except DPSparkError as err:
        return _fail("lookup", err)
    keys = list(args.key)
    if not keys and getattr(rel, "is_global", False):  # global answers (no GROUP BY): the one group's fixed key 0
        keys = ["0"]
    if not keys and not callable(getattr(rel, "answers", None)):
        print(f"dpspark lookup: give at least one KEY to look up in this {rel.kind} release", file=sys.stderr)
        return 2
    if callable(getattr(rel, "lookup_rows", None)):  # groups and answers answer in their own rows
        rows, invalid, notes = rel.lookup_rows(keys, args.key_json, exact=args.exact)
        return _print_rows(rel, rows, invalid, len(keys), notes)
    if not hasattr(rel, "estimate"):  # samples, distributions, models: nothing is keyed
        print(f"dpspark lookup: this {rel.kind} release has no keys to look up; run `dpspark inspect {args.release}` "
              "or open it in Python (dpspark.lookup.open_release)", file=sys.stderr)
        return 2
    acc = rel.accuracy
    holds = "every key" if acc.per_query_above < 0 else f"exact count > {acc.per_query_above}"
    rows: list[tuple[str, ...]] = [("key", "noisy count", "error bar", "per-key bar holds if")]
    invalid: list[str] = []
    for pos, text in enumerate(args.key, start=1):
        try:
            value = rel.estimate(parse_key(rel.universe, text, args.key_json))
        except DPSparkError as err:  # KeyNotInUniverseError and key-syntax errors never contain the key
            invalid.append(f"key #{pos}: {err}")
            rows.append((f"(key #{pos}: invalid)", "-", "-", "see below"))
            continue
        note = "  (below threshold: may be noise)" if 0 < value.value <= acc.per_query_above else ""
        rows.append((safe_text(text), str(value.value), f"+-{value.a}", holds + note))
    return _print_rows(rel, rows, invalid, len(args.key), [])


def _print_rows(rel: Any, rows: list[tuple[str, ...]], invalid: list[str], total: int, notes: list[str]) -> int:
    """Print the rows, notes on valid keys, the accuracy words and the position-only complaints (exit 1 if any)."""
    for line in format_table(rows):
        print(line)
    for line in notes:
        print(f"note: {line}")
    print()
    print(rel.accuracy_text)
    if rel.manifest.rng_test_only:
        print("WARNING: this release was made with a TEST-ONLY random generator; it is NOT private.")
    for line in invalid:
        print(f"dpspark lookup: invalid {line}", file=sys.stderr)
    if invalid:
        print(f"dpspark lookup: {len(invalid)} of {total} keys were invalid (marked by position above)",
              file=sys.stderr)
        return 1
    return 0


def add_lookup_command(subparsers: Any) -> None:
    """Register ``lookup`` on the ``dpspark`` command's subparsers."""
    lk = command_parser(subparsers, "lookup", "print the released values of keys with their error bars (a histogram's "
                                            "noisy counts, a groups release's aggregates, an answers release's "
                                            "answers)",
                 ['dpspark lookup releases/queries "café" "no such query"',
                  "dpspark lookup releases/ages 30,Berlin '31,a\\,b'",
                  "dpspark lookup --key-json releases/ages '[40, \"Köln\"]'"],
                 KEY_SYNTAX + "\nEvery valid key is answered; an invalid key is marked by its position (never "
                 "echoed)\nand the exit status is then 1. In a release whose keys were selected privately, a valid "
                 "key\nthat was not selected is reported as not released (exit 0).\n")
    lk.add_argument("release", help="release directory")
    lk.add_argument("key", nargs="*", help="keys to look up (see the key syntax below); for an answers release, "
                    "query names (none: every answer); none for a global groups release (no GROUP BY)")
    lk.add_argument("--key-json", action="store_true", help="parse each KEY as JSON (lists for tuple keys)")
    lk.add_argument("--exact", action="store_true", help="print the exact rationals (default: decimals, error "
                    "bars rounded up)")
    lk.add_argument("--no-verify", action="store_true", help=NO_VERIFY_HELP)
    lk.set_defaults(func=_cmd_lookup)


def add_release_commands(subparsers: Any) -> None:
    """Register ``lookup``, ``inspect``, ``plot``, ``verify``, ``keygen`` and ``sign`` (one module each)."""
    from dpspark.cli.inspect import add_inspect_command
    from dpspark.cli.keygen import add_keygen_command
    from dpspark.cli.plot import add_plot_command
    from dpspark.cli.sign import add_sign_command
    from dpspark.cli.verify import add_verify_command

    add_lookup_command(subparsers)
    add_inspect_command(subparsers)
    add_plot_command(subparsers)
    add_verify_command(subparsers)
    add_keygen_command(subparsers)
    add_sign_command(subparsers)
