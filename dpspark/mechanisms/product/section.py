"""The ``distribution`` kind's section codec: the manifest check of a learned product distribution."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpspark.lookup.statement_base import section_keys_and_columns
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_frac
from dpspark.release.rederive import check_rho, privacy_checked, within_budget

KIND = "distribution"
_KEYS = {"q", "columns", "flipped"}
#: releases since issue 36 also state each feature's error bar (older ones are read without it)
_KEYS_WITH_BARS = _KEYS | {"error_bars"}


def _fraction(x: Any) -> Fraction:
    """An exact probability as written (``"p/q"`` or an int); bounded size, so a hostile q never stalls a reader."""
    if isinstance(x, bool) or not isinstance(x, (str, int)):
        raise ValueError("not an exact rational")
    return Fraction(x) if isinstance(x, int) else str_to_frac(x, 4096)


def check_distribution_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """Manifest check: the three keys (and error_bars), one q (and bar) per column, every one an exact rational in [0, 1]."""
    keys = _KEYS_WITH_BARS if isinstance(section, dict) and "error_bars" in section else _KEYS
    columns = section_keys_and_columns(section, keys, "columns", "distribution", name)
    q, flipped = section["q"], section["flipped"]
    if not isinstance(q, list) or len(q) != len(columns):
        raise ReleaseFormatError(f"{name}: distribution.q must hold one probability per column")
    if not isinstance(flipped, list) or len(flipped) != len(columns) or not all(isinstance(f, bool) for f in flipped):
        raise ReleaseFormatError(f"{name}: distribution.flipped must hold one boolean per column")
    try:
        values = [_fraction(x) for x in q]
    except (ValueError, ZeroDivisionError):
        raise ReleaseFormatError(f"{name}: distribution.q holds a value that is not an exact rational") from None
    if not all(0 <= v <= 1 for v in values):
        raise ReleaseFormatError(f"{name}: distribution.q holds a value outside [0, 1]")
    if "error_bars" in section:
        bars = section["error_bars"]
        if not isinstance(bars, list) or len(bars) != len(columns):
            raise ReleaseFormatError(f"{name}: distribution.error_bars must hold one bar per column")
        try:
            bar_values = [_fraction(x) for x in bars]
        except (ValueError, ZeroDivisionError):
            raise ReleaseFormatError(f"{name}: distribution.error_bars holds a value that is not an exact "
                                     "rational") from None
        if not all(0 <= v <= 1 for v in bar_values):
            raise ReleaseFormatError(f"{name}: distribution.error_bars holds a value outside [0, 1]")


def rederive_distribution(m: Any, name: str) -> None:
    """The product learner's statements re-derive: within the config's budget, rho = ``mechanism.parameters.rho``."""
    if m.mechanism != "product_learner" or m.privacy.get("add_remove") is None:
        return
    within_budget(m, name)
    check_rho(m, name, ("add_remove", "replacement"))


def check_kind(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The kind's codec check (declared in ``kind.py``): the statements re-derive, then the section is checked."""
    privacy_checked(name, rederive_distribution, manifest, name)
    check_distribution_section(section, manifest, name)
