"""``dpspark verify``: check a release's integrity, signature and charge (``keygen``, ``sign``: their own modules).

``dpspark verify RELEASE`` opens the release with every check a reader makes (checksums of every file,
the manifest's schema, the re-derived statements, every value of its kind), and lists any file in the
directory that the release does not list (not a failure: no reader reads such a file, and nothing vouches
for it). ``--key PUB`` (repeatable)
also requires a valid Ed25519 signature by one of these keys. ``--ledger LEDGER`` finds the ledger's
spend for this release (matched by the release id its manifest states, drawn at the charge; a release
written before ids: by its output path and released status; earlier killed or failed attempts for the same
path are reported as "also charged") and checks that the release states exactly what the
ledger charged: the same mechanism, the configured (epsilon, delta) equal to the spend's, a privacy
statement within it (and within the charged rho for a zCDP entry), the released status, and the ledger's
pinned n and unit. Exit status 0 when every check passes, 1 when one fails (each is printed), 2 on an error.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpspark.errors import DPSparkError


def ledger_problems(release: Any, root: Path, ledger_path: str) -> list[str]:
    """What differs between an opened release and its ledger spend (empty: the ledger charged what it states)."""
    return ledger_check(release, root, ledger_path)[0]


def _spend_for(ledger: Any, release_id: Any, here: Path) -> tuple[Any, list[str]]:
    """The ledger row this release was charged by: by its manifest's release id, else (older releases) by path.

    Returns (row or None, problems). A release id charged for another directory is a replay.
    """
    from dpspark.ledger.store import STATUS_RELEASED

    if release_id is not None:
        rec = ledger.by_release_id(release_id)
        if rec is None:
            return None, [f"the ledger holds no spend with this release's id {release_id}"]
        if Path(rec.release_path).resolve() != here:
            return None, [f"the ledger charged release id {release_id} for {rec.release_path}, not {here}: this "
                          "manifest belongs to another release (copied or replayed under a new name)"]
        return rec, []
    found = [rec for ds in ledger.datasets() for rec in ledger.releases(ds) if Path(rec.release_path).resolve() == here]
    if any(rec.release_id is not None for rec in found):
        return None, [f"the ledger's spend for {here} names a release id but the manifest states none"]
    released = [rec for rec in found if rec.status == STATUS_RELEASED]
    if len(released) != 1:
        return None, [f"the ledger holds {len(released)} released spends for {here} among {len(found)} spends "
                      "(expected exactly one released)"]
    return released[0], []


def ledger_check(release: Any, root: Path, ledger_path: str) -> tuple[list[str], list[str]]:
    """(problems, notes) of an opened release against its ledger spend.

    The spend is matched by the manifest's release id (drawn at the charge; older releases: by path, the one
    released row). Earlier attempts charged for the same path (killed or failed, kept: never refunded) are notes.
    """
    from dpspark.ledger import Ledger
    from dpspark.ledger.store import STATUS_FAILED, STATUS_RELEASED, unit_key

    m = release.manifest
    config = m.config if hasattr(m, "config") else {}
    ledger = Ledger(ledger_path, read_only=True)
    here = root.resolve()
    rec, problems = _spend_for(ledger, getattr(m, "raw", {}).get("release_id"), here)
    if rec is None:
        return problems, []
    ds = rec.dataset_id
    notes = [f"also charged ({'a failed' if other.status == STATUS_FAILED else 'a killed'} attempt): spend "
             f"{other.id}, epsilon = {other.epsilon}, delta = {other.delta}, at {other.created_at}"
             for other in ledger.releases(ds)
             if other.id != rec.id and Path(other.release_path).resolve() == here]
    mechanism = config.get("mechanism")
    if rec.mechanism != mechanism:
        problems.append(f"the ledger charged mechanism {rec.mechanism!r}; the release states {mechanism!r}")
    if rec.status != STATUS_RELEASED:
        problems.append(f"the ledger's spend {rec.id} is {rec.status!r}, not released")
    try:
        eps = Fraction(str(config.get("epsilon")))
        delta = Fraction(str(config.get("delta") or 0))
    except (ValueError, ZeroDivisionError):
        return problems + ["the release's config states no exact (epsilon, delta)"], notes
    if (eps, delta) != (rec.epsilon, rec.delta):
        problems.append(f"the ledger charged (epsilon, delta) = ({rec.epsilon}, {rec.delta}); the release was "
                        f"configured with ({eps}, {delta})")
    problems += _statement_within(m, rec.epsilon, rec.delta, rec.rho)
    pinned = ledger.pinned_max_units(ds)
    from dpspark.privacy.relations import UNITS_CAP

    no_limit = m.max_units == UNITS_CAP  # a release without max_units composes with any pinned n up to the cap
    if pinned is not None and (pinned > UNITS_CAP if no_limit else pinned != m.max_units):
        problems.append(f"the ledger pinned n = {pinned} for dataset {ds!r}; the release states max_units = {m.max_units}")
    unit = ledger.unit(ds)
    if unit is not None and unit != unit_key(config.get("unit_column")):
        problems.append(f"the ledger pinned unit {unit!r}; the release's unit is {unit_key(config.get('unit_column'))!r}")
    return problems, notes


def _statement_within(m: Any, eps: Fraction, delta: Fraction, rho: Fraction | None = None) -> list[str]:
    """The release's add/remove statement is within the charged (epsilon, delta) (zCDP: by its CKS conversion),
    and within the charged rho when the ledger composes the spend in zCDP."""
    from dpspark.privacy.measures import ZCDP
    from dpspark.release.rederive import converted

    st = m.privacy.get("add_remove") if hasattr(m, "privacy") else m.add_remove
    if st is None:
        return ["the release states no add/remove statement, the relation the ledger composes under"]
    measure = st.measure
    if rho is not None and not (isinstance(measure, ZCDP) and measure.rho <= rho):
        return [f"the ledger composes this spend as rho = {rho}-zCDP; the release states {st.text()}"]
    if isinstance(measure, ZCDP):
        if not 0 < delta < 1:
            return ["a zCDP release needs a charged delta in (0, 1)"]
        measure = converted(measure.rho, delta, "manifest.json", "privacy.statements.add_remove")
    if not measure.epsilon.le(eps) or measure.delta > delta:
        return [f"the release states {st.text()}, more than the charged (epsilon, delta) = ({eps}, {delta})"]
    return []


#: at most this many extra files are named (then "and N more")
MAX_LISTED = 20


def extra_files(root: Path, manifest: Any) -> list[str]:
    """The entries of a release directory that the release does not list: neither its manifest, its signature
    nor a data file of the manifest (a directory is shown with a trailing ``/``). Sorted by name."""
    from dpspark.release.manifest import MANIFEST_NAME
    from dpspark.release.signature import SIGNATURE_NAME

    known = {MANIFEST_NAME, SIGNATURE_NAME, *manifest.files}
    out = []
    for entry in root.iterdir():
        if entry.name not in known:
            out.append(entry.name + ("/" if entry.is_dir() and not entry.is_symlink() else ""))
    return sorted(out)


def _cmd_verify(args: argparse.Namespace) -> int:
    from dpspark.lookup import open_release

    root = Path(args.release)
    try:
        rel = open_release(root, verify=True, trusted_keys=args.key or None)
    except DPSparkError as err:
        print(f"dpspark verify: FAILED: {err}", file=sys.stderr)
        return 1
    m = rel.manifest
    print(f"release     {root} ({m.kind}, {len(m.files)} data files)")
    print("files       every data file matches its sha256 in the manifest")
    print("statements  the manifest's statements re-derive from its parameters")
    if args.key:
        from dpspark.release.manifest import MANIFEST_NAME
        from dpspark.release.signature import check_signature

        kid = check_signature(root, (root / MANIFEST_NAME).read_bytes(), args.key)
        print(f"signature   valid, by trusted key {kid[:16]}...")
    else:
        print("signature   not checked (give --key PUB to require one)")
    extra = extra_files(root, m)
    if extra:
        shown = ", ".join(extra[:MAX_LISTED]) + (f" and {len(extra) - MAX_LISTED} more" if len(extra) > MAX_LISTED else "")
        print(f"extra       {len(extra)} file(s) beside the release, not part of it (no checksum or signature covers "
              f"them; readers never read them): {shown}")
    if args.ledger:
        try:
            problems, notes = ledger_check(rel, root, args.ledger)
        except DPSparkError as err:
            print(f"dpspark verify: error: {err}", file=sys.stderr)
            return 2
        for note in notes:
            print(f"ledger      {note}")
        for p in problems:
            print(f"dpspark verify: FAILED: ledger: {p}", file=sys.stderr)
        if problems:
            return 1
        print("ledger      the ledger charged exactly the (epsilon, delta) this release states, under its n and unit")
    return 0


def add_verify_command(subparsers: Any) -> None:
    """Register ``verify`` on the ``dpspark`` command's subparsers."""
    from dpspark.cli.common import command_parser

    v = command_parser(subparsers, "verify", "check a release's files, statements and, optionally, signature and ledger",
                ["dpspark verify releases/queries", "dpspark verify releases/queries --key team.pub",
                 "dpspark verify releases/queries --ledger budget.sqlite"],
                "The seal (manifest_sha256) only detects damage: anyone can edit and reseal a manifest.\n"
                "--key requires an Ed25519 signature by a trusted key; --ledger checks the release against\n"
                "what the ledger charged for it.\n")
    v.add_argument("release", help="release directory")
    v.add_argument("--key", action="append", default=[], metavar="PUB",
                   help="trusted Ed25519 public key (PEM); repeatable: any one of them may have signed")
    v.add_argument("--ledger", default=None, help="budget ledger (SQLite) that charged this release")
    v.set_defaults(func=_cmd_verify)
