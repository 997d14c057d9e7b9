"""The ``dpspark inspect`` command: describe a release in plain words and check its files."""

from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpspark.cli.common import command_parser
from dpspark.cli.common import fail as _fail
from dpspark.errors import DPSparkError
from dpspark.text import short
from dpspark.text.counted import counted_words

if TYPE_CHECKING:
    from dpspark.universe import Universe



def n_words(n: int) -> str:
    """The release's n: declared and public, or (no max_units declared) no limit on the number of units."""
    from dpspark.privacy.relations import UNITS_CAP, units_limit_words

    return units_limit_words(n) if n == UNITS_CAP else f"{n} units at most (declared, public)"


def universe_words(universe: "Universe", key_columns: tuple[str, ...]) -> str:
    """A universe in plain words."""
    parts = [f"{name}: {c.words}" for name, c in zip(key_columns, universe.parts)]
    size = universe.size
    shown = str(size) if size.bit_length() <= 64 else f"~2^{size.bit_length() - 1}+"
    return "; ".join(parts) + f"  (|X| = {shown})"


def _file_status(root: Path, manifest: Any) -> list[tuple[str, str, bool]]:
    from dpspark.release.errors import ReleaseFormatError
    from dpspark.release.files import check_data_file

    out = []
    for name, entry in sorted(manifest.files.items()):
        try:
            check_data_file(root, name, entry, verify=True)
            out.append((name, f"{entry.size} bytes, sha256 {entry.sha256[:16]}...: OK", True))
        except ReleaseFormatError as err:
            reason = str(err).split(": ", 1)[-1]
            out.append((name, f"{entry.size} bytes, sha256 {entry.sha256[:16]}...: FAILED ({reason})", False))
    return out


def contribution_words(config: dict[str, Any], keyed: bool = True) -> str:
    """The configured unit and contribution rules, in words (the rule, never what it did to the data).

    ``keyed``: the release counts keys (a histogram), so the per-key bounds apply; otherwise they are named only
    when configured above 1. What happens to units beyond n is said in the dry run's words
    (:func:`excess_units_words`).
    """
    unit = config.get("unit_column")
    k, c = config.get("max_keys_per_unit", 1), config.get("max_rows_per_key", 1)
    text = f"unit = {'column ' + repr(unit) if unit else 'one row'}; "
    if keyed or k != 1 or c != 1:
        text += f"each unit counts in <= {k} key(s), adding <= {c} to a key's count; "
    return text + f"more than n units: {excess_units_words(config)}"


def excess_units_words(config: dict[str, Any]) -> str:
    """What the release does with more than n units, in the words its dry run printed.

    A family may declare (``EXCESS_UNITS`` in its ``family.py``, the text its mechanisms' ``excess_units_text``
    returns) what ``on_excess_units = "truncate"`` means for a mechanism that removes no unit (answers clip each
    unit's sums; the learners divide by a noisy count of the units read); otherwise the configured rule is the words.
    """
    from dpspark.mechanisms.declared import declared_excess_units

    rule = config.get("on_excess_units", "refuse (before the engine port)")
    if rule != "truncate":
        return str(rule)
    words = declared_excess_units(str(config.get("mechanism")))
    return str(rule) if words is None else words


def unbounded_words(m: Any, exact: bool) -> str:
    """The guarantee when the number of units is not bounded: truncation to n units is 2-stable."""
    from dpspark.lookup.describe import relation_line
    from dpspark.privacy import truncated_statement

    if (m.raw.get("config") or {}).get("on_excess_units") != "truncate":
        return "none stated: with on_excess_units = 'refuse' the guarantee assumes at most n units"
    return relation_line(truncated_statement(m.add_remove), exact) + " (truncation to n units is 2-stable)"


def _cmd_inspect(args: argparse.Namespace) -> int:
    """Describe a release; a release no check caught but the description trips over is one error line, never a
    traceback (inspect is run on releases from anywhere)."""
    try:
        return _inspect(args)
    except DPSparkError as err:
        return _fail("inspect", err)
    except Exception as err:  # a malformed release a reader's checks missed: name it, never print a traceback
        return _fail("inspect", ValueError(f"{args.release}: the release is malformed and cannot be described "
                                           f"({type(err).__name__})"))


def _inspect(args: argparse.Namespace) -> int:
    from dpspark.lookup.describe import accuracy_text, privacy_text, relation_line
    from dpspark.release.manifest import read_manifest
    from dpspark.mechanisms.histogram.layout import bins_columns
    from dpspark.release.files import load_universe

    from dpspark.release.statements import StatementManifest

    root = Path(args.release)
    try:
        m = read_manifest(root)
        if isinstance(m, StatementManifest):
            return _inspect_statement(root, m, args.exact)
        status = _file_status(root, m)
        ok = all(s[2] for s in status)
        universe = load_universe(m, root, bins_columns) if ok else None
    except DPSparkError as err:
        return _fail("inspect", err)
    eps = "not given" if m.epsilon_requested is None else short(m.epsilon_requested, args.exact)
    lines = [
        ("release", str(root)),
        ("kind", f"{m.kind} (schema version {m.schema_version}, dpspark {m.dpspark_version}, created {m.created_utc})"),
        ("mechanism", f"{m.algorithm} with {m.counting} counts; requested eps = {eps}, "
                      f"delta = {short(m.delta_requested, args.exact)}"),
        ("e^eps~", f"{short(m.exp_epsilon_tilde, args.exact)} (eps~ ~ {m.raw['mechanism']['epsilon_tilde']['float']:.6g})"),  # report
        ("add/remove", relation_line(m.add_remove, args.exact)),
        ("replacement", relation_line(m.replacement, args.exact)),
        ("n", n_words(m.max_units)),
        ("units", contribution_words(m.raw.get("config") or {})),
        ("counted", counted_words(m.raw.get("config") or {}) + " (after contribution bounding, not rows of the data)"),
        ("unbounded", unbounded_words(m, args.exact)),
        ("universe", universe_words(universe, m.key_columns) if universe else f"{m.universe_spec.get('kind')} (files failed)"),
        ("key columns", ", ".join(m.key_columns)),
        ("input", ", ".join(f"{k} = {v}" for k, v in m.input.items()) or "(not described)"),
        ("randomness", m.rng_name + ("  ** TEST ONLY: NOT PRIVATE **" if m.rng_test_only else "")),
    ]
    if m.compact is not None:
        c = m.compact
        mech = c.counting
        modulus = m.raw['compact']['field']['modulus_polynomial']
        gamma = "" if not mech["gamma"] else short(Fraction(int(mech["gamma"]["num"]), int(mech["gamma"]["den"])), args.exact)
        lines[2:2] = [
            ("field", f"GF(2^{c.m}), modulus {modulus}" + (f" ({hex(c.modulus)})" if args.exact else "")),
            ("polynomial", f"l = {c.ell} coefficients (a public bound on the non-zero keys, plus one) in {c.file} "
                           f"({c.ell * c.byte_width} bytes of values)"),
            ("sampler G", f"{c.sampler['kind']} over [1, 2^{c.m}]; counts of empty bins are G(uniform), "
                          f"its bound {short(max(c.eps_a, c.eps_b), args.exact)} <= epsilon2 = {short(c.epsilon2, args.exact)}"),
            ("counts M", f"{mech['mechanism']}" + (f", gamma = {gamma}, t = {mech['t']}"
                                                   if mech["gamma"] else "") + (" (GeoSample fallback)" if mech["fallback"] else "")),
        ]
    _print_fields(lines, args.exact)
    print()
    print("Privacy:")
    print("  " + _words(privacy_text(m, args.exact), args.exact).replace("\n", "\n  "))
    print("Accuracy:")
    print("  " + _words(accuracy_text(m, args.exact), args.exact).replace("\n", "\n  "))
    print("Files:")
    for name, text, _ in status:
        print(f"  {name}: {text}")
    print("Checksums: " + ("all files match the manifest" if ok else "SOME FILES ARE DAMAGED OR MISSING"))
    return 0 if ok else 1


def _inspect_statement(root: Path, m: Any, exact: bool) -> int:
    """``inspect`` of a statement-envelope release (answers, samples, learned distributions)."""
    from dpspark.release.kinds import reader_for

    from dpspark.text.statements import accuracy_words, statement_words

    status = _file_status(root, m)
    ok = all(s[2] for s in status)
    extra: list[tuple[str, str]] = []
    reader = None
    if ok:
        try:
            reader = reader_for(m.kind)(root, manifest=m, verify=False)
            extra = reader.describe_lines()
        except DPSparkError as err:
            return _fail("inspect", err)
    lines = [
        ("release", str(root)),
        ("kind", f"{m.kind} (schema version {m.schema_version}, dpspark {m.dpspark_version}, created {m.created_utc})"),
        ("mechanism", f"{m.mechanism}: {m.algorithm}"),
        ("n", n_words(m.max_units)),
        ("units", contribution_words(m.config, keyed=bool(m.raw.get("key_columns")))),
        *extra,
        ("input", ", ".join(f"{k} = {v}" for k, v in m.input.items()) or "(not described)"),
        ("randomness", m.rng_name + ("  ** TEST ONLY: NOT PRIVATE **" if m.rng_test_only else "")),
    ]
    from dpspark.privacy.relations import UNITS_CAP

    for key, value in m.parameters.items():
        shown = n_words(value) if key == "max_units" and value == UNITS_CAP else short_json(value, exact)
        lines.insert(3, (f"parameter {key}", shown))
    _print_fields(lines, exact)
    print()
    print("Privacy:")
    for name, st in m.privacy.items():
        print(f"  {name}: {statement_words(st, exact)}")
    print("Accuracy:")
    words = getattr(reader, "accuracy_words", None)
    text = words(exact) if callable(words) else accuracy_words(m.accuracy, exact)
    print("  " + _words(text, exact).replace("\n", "\n  "))
    print("Files:")
    for name, text, _ in status:
        print(f"  {name}: {text}")
    print("Checksums: " + ("all files match the manifest" if ok else "SOME FILES ARE DAMAGED OR MISSING"))
    return 0 if ok else 1


#: lines printed as they are: paths the user chose (a long digit run in a path is not a number)
_VERBATIM = ("release", "input")


def _words(text: str, exact: bool) -> str:
    """``text`` as printed: exact with ``--exact``, else with every long number shortened."""
    from dpspark.text import readable_text

    return text if exact else readable_text(text)


def _print_fields(lines: list[tuple[str, str]], exact: bool) -> None:
    """The (label, text) lines, aligned; long numbers shortened unless ``exact`` (paths stay as they are)."""
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)}  {v if k in _VERBATIM else _words(v, exact)}")


def short_json(value: Any, exact: bool, limit: int = 160) -> str:
    """A recorded parameter in one line: its long numbers shortened, then cut at ``limit`` characters (a number
    is shortened whole, never cut in the middle), unless ``exact``."""
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    if exact:
        return text
    text = _words(text, exact)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def add_inspect_command(subparsers: Any) -> None:
    """Register ``inspect`` on the ``dpspark`` command's subparsers."""
    ins = command_parser(subparsers, "inspect", "describe a release in plain words and check its files",
                  ["dpspark inspect releases/queries", "dpspark inspect --exact releases/queries"])
    ins.add_argument("release", help="release directory")
    ins.add_argument("--exact", action="store_true",
                     help="print every number as the exact value of the manifest (may be very long)")
    ins.set_defaults(func=_cmd_inspect)
