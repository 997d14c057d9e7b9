"""The ``groups`` kind's section codec: the manifest check of a groups section (declared in ``family.py``).

Refuses, naming the file: a section whose keys or types are wrong, a table the release does not hold,
aggregates that differ from ``mechanism.parameters.aggregates``, and statements that do not re-derive
(within the config's budget; replacement by group privacy).
"""

from __future__ import annotations

from typing import Any

from dpspark.release.errors import ReleaseFormatError
from dpspark.release.rederive import check_group_privacy, privacy_checked, within_budget

SECTION_KEYS = frozenset({"table", "by", "keys", "groups", "universe", "aggregates", "beta", "bounds", "nulls",
                          "composition"})
AGGREGATE_KEYS = frozenset({"name", "kind", "error_unit", "noise", "condition"})
KINDS = ("count", "sum", "mean", "variance", "quantile")
#: most released groups a reader takes (the public key lists stay far below)
MAX_GROUPS = 1 << 32


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_section(section: Any, manifest: Any, name: str) -> None:
    """The ``groups`` section: its keys and types, the table among the files, the aggregates of the parameters."""
    if not isinstance(section, dict) or set(section) != SECTION_KEYS:
        raise ReleaseFormatError(f"{name}: a groups section holds exactly {sorted(SECTION_KEYS)}")
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
            isinstance(a, dict) and set(a) == AGGREGATE_KEYS and a["kind"] in KINDS and isinstance(a["name"], str)
            and a["error_unit"] == ("rank_rows" if a["kind"] == "quantile" else "value")
            and isinstance(a["condition"], str) and isinstance(a["noise"], str) for a in aggs):
        raise ReleaseFormatError(f"{name}: groups.aggregates must describe each aggregate (name, kind, error_unit, "
                                 "noise, condition)")
    listed = manifest.parameters.get("aggregates")
    if not isinstance(listed, list) or [(a.get("name"), a.get("kind")) for a in listed if isinstance(a, dict)] != [
            (a["name"], a["kind"]) for a in aggs]:
        raise ReleaseFormatError(f"{name}: groups.aggregates differ from mechanism.parameters.aggregates")
    if len({a["name"] for a in aggs}) != len(aggs):
        raise ReleaseFormatError(f"{name}: groups.aggregates names an aggregate twice")
    if manifest.parameters.get("by") != by or manifest.parameters.get("beta") != section["beta"]:
        raise ReleaseFormatError(f"{name}: groups.by and groups.beta must be mechanism.parameters' by and beta")


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
