"""The ``pure_groups`` kind's section codec: the groups section check, for the pure mechanism's manifest.

The table, the section and the reader are the ``groups`` kind's (:mod:`dpspark.mechanisms.groups.section`); only
the writing mechanism differs (docs/groups.md §H).
"""

from __future__ import annotations

from typing import Any

from dpspark.mechanisms.groups.section import check_section, rederive_groups
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.rederive import privacy_checked


def check_kind(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The statements re-derive within the budget, then the groups section is checked."""
    if manifest.mechanism != "pure_groups":
        raise ReleaseFormatError(f"{name}: a pure_groups release is written by mechanism 'pure_groups'")
    privacy_checked(name, rederive_groups, manifest, name)
    check_section(section, manifest, name)
