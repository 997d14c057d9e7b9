"""What a histogram release counted, in words: the count after contribution bounding, never "the data's count".

With a unit column, each unit keeps at most k keys and adds at most c to a kept key's count, so a released
count estimates "distinct units per key" (c = 1) or "rows per key, at most c per unit and key" - not the rows
of the data. ``lookup``, ``inspect``, ``to_pandas`` and ``plot`` say so with :func:`counted_words`.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["counted_short", "counted_words"]


def _plural(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def counted_words(config: Mapping[str, Any]) -> str:
    """What each released count counts, from the release's config (``unit_column``, ``max_keys_per_unit``,
    ``max_rows_per_key``): e.g. ``distinct units (tailnum) per key, at most 10 keys per unit``."""
    unit = config.get("unit_column")
    k = int(config.get("max_keys_per_unit", 1) or 1)
    c = int(config.get("max_rows_per_key", 1) or 1)
    if not unit:
        return "rows per key (each row is one unit)"
    keys = f"at most {_plural(k, 'key')} per unit"
    if c == 1:
        return f"distinct units ({unit}) per key, {keys}"
    return f"rows per key, at most {c} per unit and key, {keys} (unit: {unit})"


def counted_short(config: Mapping[str, Any]) -> str:
    """A short axis label: ``distinct units per key`` or ``rows per key (<= c per unit)``."""
    unit = config.get("unit_column")
    c = int(config.get("max_rows_per_key", 1) or 1)
    if not unit:
        return "rows per key"
    return "distinct units per key" if c == 1 else f"rows per key (<= {c} per unit)"
