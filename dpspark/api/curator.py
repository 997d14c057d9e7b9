"""Options whose outcome is the data: the curator's to switch on, never an analyst's.

Two release options make a data pass *refuse* depending on the data, and the refusal passes the data pass
with its own text (a :class:`~dpspark.engine.errors.CuratorError`, see :mod:`dpspark.engine.data_pass`):

* ``out_of_universe = "error"`` fails iff some (kept) unit holds a key outside the declared universe;
* ``on_excess_units = "refuse"`` fails iff the input holds more than ``max_units`` units.

Each answer is exact: one bit at epsilon = infinity, bought for the call's nominal price. An analyst who can
set them learns, e.g., whether anybody's key is 'hiv' (one call with ``keys=['hiv']`` left out of the list)
for ten calls at epsilon = 1/10 each. So a :class:`~dpspark.Session` refuses them, before anything is read or
charged, unless the curator enabled them when the Session was built (``Session(..., curator_checks=True)``,
which warns with :data:`CURATOR_CHECKS_WARNING`). The CLI and spark-submit read a curator's config file and
keep them. The check runs on the parsed spec, so every way an analyst's call reaches a field (a keyword,
``**privacy``, or a ``sections={"privacy": ...}`` pass-through) is covered by the same test.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.engine.spec import ReleaseSpec

__all__ = ["CURATOR_CHECKS_WARNING", "CURATOR_OPTIONS", "CuratorOptionError", "check_analyst_files",
           "check_analyst_spec", "check_analyst_unit"]

#: field -> (the value that makes the outcome depend on the data, what its outcome discloses)
CURATOR_OPTIONS: dict[str, tuple[str, str]] = {
    "out_of_universe": ("error", "whether any unit holds a key outside the declared universe or key list"),
    "on_excess_units": ("refuse", "whether the input holds more units than max_units"),
}

#: the warning a Session with ``curator_checks=True`` gives when it is built
CURATOR_CHECKS_WARNING = (
    "curator_checks is on: releases of this Session may use privacy.out_of_universe = 'error' (its error "
    "discloses whether any unit holds a key outside the declared universe or key list) and "
    "privacy.on_excess_units = 'refuse' (its error discloses whether the input holds more units than "
    "max_units). Each such outcome is an exact answer about the data, outside the differential-privacy "
    "guarantee and not charged to any budget. Use it only as the curator of this data, never in a Session "
    "an analyst can call.")


class CuratorOptionError(DPSparkError, ValueError):
    """An analyst's call asked for an option whose outcome depends on the data (refused before any spend)."""


def check_analyst_spec(spec: "ReleaseSpec", *, curator_checks: bool) -> None:
    """Refuse ``spec`` when it switches on a data-dependent option and the curator did not enable them.

    Data-free (the spec only): it runs before the budget check, the plan check and any read.
    """
    if curator_checks:
        return
    for name, (value, what) in CURATOR_OPTIONS.items():
        if getattr(spec, name, None) == value:
            raise CuratorOptionError(
                f"privacy.{name} = {value!r} is a curator-side check: its outcome discloses {what}, exactly "
                "(no noise, no charge), so a Session call cannot switch it on. The curator may enable such "
                "checks when building the Session (Session(..., curator_checks=True)) or use them in a "
                "config file run by the CLI; nothing was read and nothing was spent")


def check_analyst_unit(spec: "ReleaseSpec", *, unit_column: str | None, max_units: int) -> None:
    """Refuse ``spec`` when it changes the Session's privacy unit (``unit_column``) or its ``max_units``
    (``max_units``: the Session's n as releases state it, the fixed cap when it declares none).

    The unit and n are the curator's: the Session's budget is a statement under add/remove of one such unit
    among at most n. A release over another unit would be charged as if it protected the Session's unit
    while it protects another (a row of a coarser unit is a *change* of that unit: up to twice the stated
    loss), and a smaller or larger n changes what the budget means. A release may repeat them.
    """
    from dpspark.privacy.relations import UNITS_CAP

    if spec.unit_column != unit_column or spec.max_units != max_units:
        def n(v: int) -> str:
            return "none declared" if v == UNITS_CAP else str(v)

        raise CuratorOptionError(
            "the privacy unit and max_units are the Session's (unit_column = "
            f"{unit_column!r}, max_units = {n(max_units)}): a release cannot change them (it asked for unit_column "
            f"= {spec.unit_column!r}, max_units = {n(spec.max_units)}); the curator sets them when building the "
            "Session (Session(..., unit_column=..., max_units=...)); nothing was read and nothing was spent")


def _named_files(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every (field, path) an assembled raw config would read: key files and universe value files."""
    found: list[tuple[str, str]] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if k == "file" and isinstance(v, str):
                    found.append((f"{where}.file", v))
                else:
                    walk(v, f"{where}.{k}")
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    groups = raw.get("groups")
    if isinstance(groups, Mapping):
        if isinstance(groups.get("keys_file"), str):
            found.append(("groups.keys_file", groups["keys_file"]))
        join = groups.get("join")
        if isinstance(join, Mapping) and isinstance(join.get("path"), str):  # a public table is checked (unique
            found.append(("groups.join.path", join["path"]))  # keys) and read: pointed at the data, both leak
    walk(raw.get("universe"), "universe")
    return found


def check_analyst_files(raw: Mapping[str, Any], *, public_files: "frozenset[str]") -> None:
    """Refuse an analyst's call that names a file to read (a key list, a universe's value file, a public table
    to join) unless the
    curator listed it as public when building the Session (``Session(..., public_files=[...])``).

    A key file's rows are released as public keys, in the clear: pointed at the data itself (or any file the
    process can read), a key list would publish its values with no noise. Checked on the assembled config,
    before it is parsed, so no such file is opened.
    """
    for field, path in _named_files(raw):
        if os.path.realpath(path) not in public_files:
            raise CuratorOptionError(
                f"{field} names a file to read ({path!r}); a Session reads only the files its curator listed as "
                "public (Session(..., public_files=[...])), since a key file's rows are released in the clear; "
                "give the keys as a list or table instead (keys=...), or ask the curator to list the file; "
                "nothing was read and nothing was spent")
