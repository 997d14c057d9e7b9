"""The driver-side end of the count stage, shared by every backend: the row-level excess rule, canonical order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpspark.engine.errors import CuratorError
from dpspark.engine.stages import CountsStage

if TYPE_CHECKING:
    from dpspark.rng import RandomSource


def finish_counts(indices: list[int], counts: list[int], stage: CountsStage, rng: "RandomSource") -> tuple[list[int], list[int]]:
    """Driver-side part of the count stage shared by every backend: the row-level excess rule, canonical order.

    Without a unit column every row is a unit, so the total count is the number of units. "refuse" fails
    (before any noise); "truncate" keeps the first n rows in keyed-hash order of their index - a function
    of the multiset of rows, so adding one row changes the kept multiset by at most one replacement.
    """
    order = sorted(range(len(indices)), key=indices.__getitem__)
    indices = [indices[i] for i in order]
    counts = [counts[i] for i in order]
    if stage.unit_column is not None or sum(counts) <= stage.max_units:
        return indices, counts
    if stage.on_excess_units == "refuse":
        raise CuratorError(
            f"the input holds more rows than privacy.max_units = {stage.max_units} and on_excess_units = 'refuse' "
            "(curator-side check, before any noise was drawn); raise max_units or use on_excess_units = 'truncate'")
    import hashlib

    key = rng.bits(128).to_bytes(16, "big")
    rank = sorted(range(len(indices)), key=lambda i: hashlib.blake2b(indices[i].to_bytes(32, "big"), key=key).digest())
    left = stage.max_units
    kept = [0] * len(indices)
    for i in rank:  # a loop over the distinct keys (at most n + excess); only the driver's exact ints
        take = min(counts[i], left)
        kept[i] = take
        left -= take
    pairs = [(x, c) for x, c in zip(indices, kept) if c > 0]
    return [x for x, _ in pairs], [c for _, c in pairs]
