"""The ``dpspark lookup``, ``dpspark inspect`` and ``dpspark plot`` commands (see :data:`KEY_SYNTAX`)."""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpspark.text import short
from dpspark.lookup.display import format_table, safe_text
from dpspark.errors import DPSparkError, ParameterError
from dpspark.universe import Universe
from dpspark.universe.keytext import split_tuple_key  # noqa: F401 - part of this module's interface


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

NO_VERIFY_HELP = (
    "skip the sha256 check of the data files. This gives up the guarantee that the answers are the release's: "
    "a damaged or altered file is read as is and can show wrong counts or WRONG KEYS (one flipped byte can show "
    "one key's count under another key's name) with no error"
)


def parse_key(universe: Universe, text: str, as_json: bool = False) -> Any:
    """A KEY argument as a key of ``universe`` (see :data:`KEY_SYNTAX`)."""
    if as_json:
        try:
            value = json.loads(text)
        except ValueError:
            raise ParameterError("--key-json: a KEY is not valid JSON") from None
        return universe.parse_json(value)
    return universe.parse_text(text)


# ---- universe and file descriptions -------------------------------------------------------------


def universe_words(universe: Universe, key_columns: tuple[str, ...]) -> str:
    """A universe in plain words."""
    parts = [f"{name}: {c.words}" for name, c in zip(key_columns, universe.parts)]
    size = universe.size
    shown = str(size) if size.bit_length() <= 64 else f"~2^{size.bit_length() - 1}+"
    return "; ".join(parts) + f"  (|X| = {shown})"


def _fail(command: str, err: BaseException) -> int:
    print(f"dpspark {command}: error: {err}", file=sys.stderr)
    return 2


# ---- lookup ------------------------------------------------------------------------------------------


def _cmd_lookup(args: argparse.Namespace) -> int:
    """Answer every valid key; mark each invalid one by its position (never echoing it); exit 1 if any was invalid."""
    from dpspark.lookup import open_release

    try:
        rel = open_release(args.release, verify=not args.no_verify)
    except DPSparkError as err:
        return _fail("lookup", err)
    if not hasattr(rel, "estimate"):  # answers, samples, distributions: nothing is keyed
        print(f"dpspark lookup: a {rel.kind} release has no keys to look up; run `dpspark inspect {args.release}` "
              "or open it in Python (dpspark.lookup.open_release)", file=sys.stderr)
        return 2
    acc = rel.accuracy
    holds = "every key" if acc.per_query_above < 0 else f"true count > {acc.per_query_above}"
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
    for line in format_table(rows):
        print(line)
    print()
    print(rel.accuracy_text)
    if rel.manifest.rng_test_only:
        print("WARNING: this release was made with a TEST-ONLY random generator; it is NOT private.")
    if invalid:
        for line in invalid:
            print(f"dpspark lookup: invalid {line}", file=sys.stderr)
        print(f"dpspark lookup: {len(invalid)} of {len(args.key)} keys were invalid (marked by position above)",
              file=sys.stderr)
        return 1
    return 0


# ---- inspect -----------------------------------------------------------------------------------------


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


def contribution_words(config: dict[str, Any]) -> str:
    """The configured unit and contribution rules, in words (the rule, never what it did to the data)."""
    unit = config.get("unit_column")
    k, c = config.get("max_keys_per_unit", 1), config.get("max_rows_per_key", 1)
    rule = config.get("on_excess_units", "refuse (before the engine port)")
    text = f"unit = {'column ' + repr(unit) if unit else 'one row'}; each unit counts in <= {k} key(s), "
    text += f"adding <= {c} to a key's count; more than n units: {rule}"
    return text


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
    from dpspark.release.reader import load_universe

    from dpspark.release.statement_envelope import StatementManifest

    root = Path(args.release)
    try:
        m = read_manifest(root)
        if isinstance(m, StatementManifest):
            return _inspect_statement(root, m, args.exact)
        status = _file_status(root, m)
        ok = all(s[2] for s in status)
        universe = load_universe(m, root) if ok else None
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
        ("n", f"{m.max_units} units at most (declared, public)"),
        ("units", contribution_words(m.raw.get("config") or {})),
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
            ("polynomial", f"l = n + 1 = {c.ell} coefficients in {c.file} ({c.ell * c.byte_width} bytes of values)"),
            ("sampler G", f"{c.sampler['kind']} over [1, 2^{c.m}]; counts of empty bins are G(uniform), "
                          f"its bound {short(max(c.eps_a, c.eps_b), args.exact)} <= epsilon2 = {short(c.epsilon2, args.exact)}"),
            ("counts M", f"{mech['mechanism']}" + (f", gamma = {gamma}, t = {mech['t']}"
                                                   if mech["gamma"] else "") + (" (GeoSample fallback)" if mech["fallback"] else "")),
        ]
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)}  {v}")
    print()
    print("Privacy:")
    print("  " + privacy_text(m, args.exact).replace("\n", "\n  "))
    print("Accuracy:")
    print("  " + accuracy_text(m, args.exact).replace("\n", "\n  "))
    print("Files:")
    for name, text, _ in status:
        print(f"  {name}: {text}")
    print("Checksums: " + ("all files match the manifest" if ok else "SOME FILES ARE DAMAGED OR MISSING"))
    return 0 if ok else 1


def _inspect_statement(root: Path, m: Any, exact: bool) -> int:
    """``inspect`` of a statement-envelope release (answers, samples, learned distributions)."""
    from dpspark.lookup.readers import reader_for

    status = _file_status(root, m)
    ok = all(s[2] for s in status)
    extra: list[tuple[str, str]] = []
    if ok:
        try:
            extra = reader_for(m.kind)(root, manifest=m, verify=False).describe_lines()
        except DPSparkError as err:
            return _fail("inspect", err)
    lines = [
        ("release", str(root)),
        ("kind", f"{m.kind} (schema version {m.schema_version}, dpspark {m.dpspark_version}, created {m.created_utc})"),
        ("mechanism", f"{m.mechanism}: {m.algorithm}"),
        ("n", f"{m.max_units} units at most (declared, public)"),
        ("units", contribution_words(m.config)),
        *extra,
        ("input", ", ".join(f"{k} = {v}" for k, v in m.input.items()) or "(not described)"),
        ("randomness", m.rng_name + ("  ** TEST ONLY: NOT PRIVATE **" if m.rng_test_only else "")),
    ]
    for key, value in m.parameters.items():
        lines.insert(3, (f"parameter {key}", short_json(value, exact)))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)}  {v}")
    print()
    print("Privacy:")
    for name, st in m.privacy.items():
        print(f"  {name}: {st.text()}")
    print("Accuracy:")
    print("  " + m.accuracy.text().replace("\n", "\n  "))
    print("Files:")
    for name, text, _ in status:
        print(f"  {name}: {text}")
    print("Checksums: " + ("all files match the manifest" if ok else "SOME FILES ARE DAMAGED OR MISSING"))
    return 0 if ok else 1


def short_json(value: Any, exact: bool, limit: int = 160) -> str:
    """A recorded parameter in one line (cut at ``limit`` characters unless ``exact``)."""
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if exact or len(text) <= limit else text[: limit - 1] + "…"


# ---- plot --------------------------------------------------------------------------------------------


def _printable(value: Any) -> str:
    text = str(value)
    return text if isinstance(value, (str, int)) and text.isprintable() else ascii(value)


def _labels(table: Any, manifest: Any) -> list[str]:
    cols = manifest.bins["columns"]
    per_key: list[list[str]] = []
    for key in manifest.key_columns:
        roles = {c["role"]: c["name"] for c in cols if c.get("key_column") == key}
        if "key" in roles:
            values = table.column(roles["key"]).to_pylist()
            fallback = table.column(roles["key_bytes"]).to_pylist() if "key_bytes" in roles else values
            per_key.append([_printable(b) if v is None else _printable(v) for v, b in zip(values, fallback)])
        else:
            per_key.append([f"#{int.from_bytes(bytes(v), 'big'):x}" for v in table.column(roles["key_hash_bin"]).to_pylist()])
    return [", ".join(parts) for parts in zip(*per_key)]


def _cmd_plot(args: argparse.Namespace) -> int:
    import numpy as np

    from dpspark.lookup import open_release

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _fail("plot", ImportError("matplotlib is not installed; install the 'plot' extra: pip install 'dpspark[plot]'"))
    if args.top < 1:
        return _fail("plot", ValueError("--top must be at least 1"))
    try:
        rel = open_release(args.release, verify=not args.no_verify)
        if not hasattr(rel, "table"):
            raise ParameterError(
                "plot draws the released bins of a sparse release; a compact release has a noisy count for every "
                "key of the universe and no list of bins: use 'dpspark lookup RELEASE KEY...' for the keys you need"
            )
        table = rel.table()
    except DPSparkError as err:
        return _fail("plot", err)
    from dpspark.cli.plotfont import covered, drawable_label, font_chain

    counts = table.column("noisy_count").to_numpy()
    below = rel.below_threshold(counts)
    hidden = 0 if args.show_below_threshold else int(below.sum())
    candidates = np.arange(len(counts)) if args.show_below_threshold else np.flatnonzero(~below)
    order = candidates[np.argsort(-counts[candidates], kind="stable")[: args.top]]
    if args.order == "universe":
        order = np.sort(order)  # the bins are stored ascending by universe index
    top = table.take(order)
    chain = font_chain()
    drawable = covered(chain)
    labels = [drawable_label(lab, drawable) for lab in _labels(top, rel.manifest)]
    values = top.column("noisy_count").to_numpy()
    marked = below[order]
    acc = rel.accuracy
    with matplotlib.rc_context({"font.family": chain}):
        fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(values) + 2), 4.5))
        positions = np.arange(len(values))
        colors = ["#bbbbbb" if m else "#4c72b0" for m in marked]
        ax.bar(positions, values, yerr=acc.a_per_query, capsize=3, color=colors, ecolor="#333333")
        if acc.per_query_above >= 0:
            ax.axhline(acc.per_query_above, color="#c44e52", linestyle="--", linewidth=1,
                       label=f"threshold {acc.per_query_above} (bar holds above)")
            if marked.any():
                ax.bar([], [], color="#bbbbbb", label="below threshold: may be noise")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_xticks(positions)
        ax.set_xticklabels([lab if len(lab) <= 24 else lab[:23] + "~" for lab in labels], rotation=60, ha="right",
                           fontsize=8)
        ax.set_xlabel(", ".join(rel.manifest.key_columns)
                      + (" (universe order)" if args.order == "universe" else " (largest noisy count first)"))
        ax.set_ylabel("noisy count")
        eps = rel.manifest.add_remove.epsilon_float()  # report
        shown = "" if eps is None else f", eps ~ {eps:.3g}"  # report
        note = f"; {hidden} bins below threshold hidden" if hidden else ""
        ax.set_title(f"top {len(values)} bins, +-{acc.a_per_query} per key (beta = {short(acc.beta_per_query)}){shown}"
                     + note + (" [TEST RNG]" if rel.manifest.rng_test_only else ""), fontsize=9)
        fig.tight_layout()
        try:
            fig.savefig(args.output, format="png", dpi=args.dpi)
        except OSError as err:
            return _fail("plot", OSError(f"{args.output}: cannot write the PNG ({err.strerror})"))
        finally:
            plt.close(fig)
    extra = f"; {hidden} bins below the threshold hidden (--show-below-threshold draws them)" if hidden else ""
    print(f"wrote {args.output} ({len(values)} bins{extra})")
    return 0


def _parser(subparsers: Any, name: str, summary: str, examples: list[str], extra: str = "") -> argparse.ArgumentParser:
    """A subcommand with a one-line description, examples and (optionally) more text in its --help."""
    epilog = (extra + "\n" if extra else "") + "examples:\n" + "\n".join(f"  {e}" for e in examples)
    return subparsers.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".",
                                 epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_release_commands(subparsers: Any) -> None:
    """Register ``lookup``, ``inspect`` and ``plot`` on the ``dpspark`` command's subparsers."""
    lk = _parser(subparsers, "lookup", "print noisy counts of keys with their error bars",
                 ['dpspark lookup releases/queries "café" "no such query"',
                  "dpspark lookup releases/ages 30,Berlin '31,a\\,b'",
                  "dpspark lookup --key-json releases/ages '[40, \"Köln\"]'"],
                 KEY_SYNTAX + "\nEvery valid key is answered; an invalid key is marked by its position (never "
                 "echoed)\nand the exit status is then 1.\n")
    lk.add_argument("release", help="release directory")
    lk.add_argument("key", nargs="+", help="keys to look up (see the key syntax below)")
    lk.add_argument("--key-json", action="store_true", help="parse each KEY as JSON (lists for tuple keys)")
    lk.add_argument("--no-verify", action="store_true", help=NO_VERIFY_HELP)
    lk.set_defaults(func=_cmd_lookup)

    ins = _parser(subparsers, "inspect", "describe a release in plain words and check its files",
                  ["dpspark inspect releases/queries", "dpspark inspect --exact releases/queries"])
    ins.add_argument("release", help="release directory")
    ins.add_argument("--exact", action="store_true",
                     help="print every number as the exact value of the manifest (may be very long)")
    ins.set_defaults(func=_cmd_inspect)

    pl = _parser(subparsers, "plot", "draw the top-K bins with their error bars as a PNG (needs matplotlib)",
                 ["dpspark plot releases/queries -o top.png",
                  "dpspark plot releases/ages --top 121 --order universe -o ages.png"],
                 "Bins whose noisy count is at or below the accuracy threshold may be noise (pure_sparse releases\n"
                 "hold such bins by design); they are hidden unless --show-below-threshold.\n")
    pl.add_argument("release", help="release directory")
    pl.add_argument("--top", type=int, default=20, help="number of bins to draw (default 20)")
    pl.add_argument("--order", choices=["count", "universe"], default="count",
                    help="bar order: largest noisy count first (default), or the universe's order (int ranges, "
                         "categorical lists) for the top-K bins")
    pl.add_argument("--show-below-threshold", action="store_true",
                    help="also draw bins at or below the accuracy threshold (grey: they may be noise)")
    pl.add_argument("-o", "--output", required=True, help="output PNG file")
    pl.add_argument("--dpi", type=int, default=100, help="resolution (default 100)")
    pl.add_argument("--no-verify", action="store_true", help=NO_VERIFY_HELP)
    pl.set_defaults(func=_cmd_plot)
    from dpspark.cli.verify import add_verify_commands

    add_verify_commands(subparsers)
