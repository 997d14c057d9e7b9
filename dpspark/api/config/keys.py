"""The ``[keys]`` and ``[universe]`` sections of a keyed release: the key columns and their universe."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dpspark.api.config.common import fail
from dpspark.universe import Universe, UniverseConfigError, universe_from_dict


def parse_keys(raw: Mapping[str, Any], source: Path) -> tuple[list[str], Universe]:
    """The key columns and the universe; the universe has one component per key column."""
    cols = raw["keys"]["columns"]
    if isinstance(cols, str):
        cols = [cols]
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) and c for c in cols):
        raise fail(source, "keys.columns must be a non-empty list of column names")
    if len(set(cols)) != len(cols):
        raise fail(source, "keys.columns has a duplicate column")
    uspec = dict(raw["universe"])
    try:
        universe = universe_from_dict(uspec, base_dir=source.parent)
    except UniverseConfigError as err:
        text = str(err)
        if "above the maximum of 2^256" in text:  # [userfix] one message with the chosen mechanism's real limit
            text = text.split(" (max_bytes must be")[0] + "; " + universe_limit_text((raw.get("privacy") or {}).get("mechanism"))
        raise fail(source, f"[universe] {text}") from None
    ncomp = len(uspec.get("components", [])) if uspec.get("kind") == "tuple" else 1
    if ncomp != len(cols):
        raise fail(source, f"keys.columns names {len(cols)} column(s) but the universe has {ncomp} component(s)")
    return cols, universe


def universe_limit_text(mechanism: object) -> str:
    """The largest universe ``mechanism`` takes, in words (string and bytes keys: the largest max_bytes)."""
    from dpspark.mechanisms.registry import UnknownMechanismError, mechanism_class

    try:
        return mechanism_class(mechanism).universe_limit_text()  # type: ignore[arg-type]
    except (UnknownMechanismError, TypeError):
        return "no mechanism takes universes above 2^256 keys (string/bytes keys: max_bytes <= 31)"
