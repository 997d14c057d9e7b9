"""The ``groups`` kind's section codec: the manifest check of a groups section (declared in ``family.py``).

Refuses, naming the file: a section whose keys or types are wrong, a table the release does not hold,
aggregates that differ from ``mechanism.parameters.aggregates``, and statements that do not re-derive
(within the config's budget; replacement by group privacy).
"""

from __future__ import annotations

from typing import Any

from dpspark.lookup.stddev import POSTS
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.rederive import check_group_privacy, privacy_checked, within_budget

SECTION_KEYS = frozenset({"table", "by", "keys", "groups", "universe", "aggregates", "beta", "bounds", "nulls",
                          "composition"})
#: optional section entries (DP outputs of the pre-pass): the noisy unit count, the "auto" limits chosen
OPTIONAL_KEYS = frozenset({"units", "limits"})
UNITS_KEYS = frozenset({"noisy", "error", "beta", "max_units", "share"})
LIMITS_KEYS = frozenset({"max_groups_per_unit", "max_rows_per_group", "auto", "chosen", "share", "cover"})
AGGREGATE_KEYS = frozenset({"name", "kind", "error_unit", "noise", "condition"})
#: an aggregate may also say ``"post": "sqrt"`` (a variance shown as its standard deviation, :data:`POSTS`)
KINDS = ("count", "sum", "mean", "variance", "quantile")
#: most released groups a reader takes (the public key lists stay far below)
MAX_GROUPS = 1 << 32


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_section(section: Any, manifest: Any, name: str) -> None:
    """The ``groups`` section: its keys and types, the table among the files, the aggregates of the parameters."""
    if not isinstance(section, dict) or not SECTION_KEYS <= set(section) <= SECTION_KEYS | OPTIONAL_KEYS:
        raise ReleaseFormatError(f"{name}: a groups section holds exactly {sorted(SECTION_KEYS)} (and optionally "
                                 f"{sorted(OPTIONAL_KEYS)})")
    _check_pre(section, manifest, name)
    by = section["by"]
    if not isinstance(by, list) or not by or not all(isinstance(c, str) and c for c in by) or len(set(by)) != len(by):
        raise ReleaseFormatError(f"{name}: groups.by must be a non-empty list of distinct column names")
    if section["keys"] not in ("public", "private"):
        raise ReleaseFormatError(f"{name}: groups.keys must be \"public\" or \"private\"")
    if not _int(section["groups"]) or not 0 <= section["groups"] <= MAX_GROUPS:
        raise ReleaseFormatError(f"{name}: groups.groups must be an int in [0, 2^32]")
    if not isinstance(section["table"], str) or f"{section['table']}.parquet" not in manifest.files:
        raise ReleaseFormatError(f"{name}: the groups table {section['table']!r} is not among the release files")
    if not isinstance(section["universe"], dict):
        raise ReleaseFormatError(f"{name}: groups.universe must be a universe description")
    for key in ("beta", "bounds", "nulls", "composition"):
        if not isinstance(section[key], str):
            raise ReleaseFormatError(f"{name}: groups.{key} must be a string")
    aggs = section["aggregates"]
    if not isinstance(aggs, list) or not aggs or not all(
            isinstance(a, dict) and AGGREGATE_KEYS <= set(a) <= AGGREGATE_KEYS | {"post"} and a["kind"] in KINDS
            and isinstance(a["name"], str) and a["error_unit"] == ("rank_rows" if a["kind"] == "quantile" else "value")
            and isinstance(a["condition"], str) and isinstance(a["noise"], str)
            and ("post" not in a or POSTS.get(a["post"]) == a["kind"]) for a in aggs):
        raise ReleaseFormatError(f"{name}: groups.aggregates must describe each aggregate (name, kind, error_unit, "
                                 "noise, condition; post = \"sqrt\" only on a variance)")
    listed = manifest.parameters.get("aggregates")
    if not isinstance(listed, list) or [(a.get("name"), a.get("kind"), a.get("post")) for a in listed
                                        if isinstance(a, dict)] != [(a["name"], a["kind"], a.get("post")) for a in aggs]:
        raise ReleaseFormatError(f"{name}: groups.aggregates differ from mechanism.parameters.aggregates")
    if len({a["name"] for a in aggs}) != len(aggs):
        raise ReleaseFormatError(f"{name}: groups.aggregates names an aggregate twice")
    if manifest.parameters.get("by") != by or manifest.parameters.get("beta") != section["beta"]:
        raise ReleaseFormatError(f"{name}: groups.by and groups.beta must be mechanism.parameters' by and beta")


def _check_pre(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The optional ``units`` (noisy unit count) and ``limits`` (chosen "auto" limits) entries."""
    units = section.get("units")
    if units is not None and not (
            isinstance(units, dict) and set(units) == UNITS_KEYS and _int(units["noisy"]) and units["noisy"] >= 0
            and _int(units["error"]) and units["error"] >= 0 and _int(units["max_units"])
            and units["max_units"] == (getattr(manifest, "config", None) or {}).get("max_units")
            and isinstance(units["beta"], str) and isinstance(units["share"], str)):
        raise ReleaseFormatError(f"{name}: groups.units must hold {sorted(UNITS_KEYS)}: non-negative ints noisy and "
                                 "error, the manifest's max_units, and the beta and share as strings")
    limits = section.get("limits")
    if limits is not None and not (
            isinstance(limits, dict) and set(limits) == LIMITS_KEYS
            and all(_int(limits[k]) and 1 <= limits[k] <= 1 << 20 for k in ("max_groups_per_unit", "max_rows_per_group"))
            and isinstance(limits["auto"], list) and isinstance(limits["chosen"], dict)
            and isinstance(limits["share"], str) and isinstance(limits["cover"], str)):
        raise ReleaseFormatError(f"{name}: groups.limits must hold {sorted(LIMITS_KEYS)} with limits in [1, 2^20]")


def rederive_groups(m: Any, name: str) -> None:
    """The add/remove statement fits the configured budget; replacement is add/remove by group privacy."""
    within_budget(m, name)
    check_group_privacy(m, name)


def check_kind(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The kind's codec: the statements re-derive, then the section is checked."""
    if manifest.mechanism != "groups":
        raise ReleaseFormatError(f"{name}: a groups release is written by mechanism 'groups'")
    privacy_checked(name, rederive_groups, manifest, name)
    check_section(section, manifest, name)
