"""What the families declare in words, read without importing any mechanism class (the read commands use it)."""

from __future__ import annotations

import importlib


def declared_excess_units(name: str) -> str | None:
    """What ``on_excess_units = "truncate"`` means for mechanism ``name``, when its family declares it
    (``EXCESS_UNITS`` in its ``family.py``: a mechanism that removes no unit says what it does instead);
    None when the configured rule itself is the words. One source for the dry run and ``dpspark inspect``."""
    from dpspark.release.kinds import FAMILIES

    for module, _kinds in FAMILIES.values():
        words = getattr(importlib.import_module(module), "EXCESS_UNITS", {}).get(name)
        if words is not None:
            return str(words)
    return None
