"""Per-group statistics held column-wise: what the engine returns and what the release reads.

:class:`GroupColumns` is the kernels' result (:func:`dpspark.mechanisms.groups.core.decode`): a read-only
sequence of :class:`GroupStats` (equal, element by element, to the list
the kernels used to return) that keeps the statistics in numpy columns, so that 10^5 groups cost no Python
object each. :func:`gather` turns either form, a key list for public keys, into the :class:`Gathered`
columns the release computes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from dpspark.mechanisms.groups.aggregates import Aggregate, GroupsError, Kind

#: int64 arithmetic is exact while every value and intermediate stays below this (public bounds decide)
INT64_SAFE = 1 << 62


def object_column(values: Sequence[int]) -> np.ndarray:
    """A numpy object array of Python ints (exact at any size)."""
    out = np.empty(len(values), dtype=object)
    out[:] = [int(v) for v in values]
    return out


def _as(column: np.ndarray, int64: bool) -> np.ndarray:
    if int64:
        if column.dtype == np.int64:
            return column
        try:
            return column.astype(np.int64)
        except OverflowError:  # beyond the public bound: the range check would refuse it; say so, value-free
            raise GroupsError("the engine's statistics for a group are outside their public range "
                              "(an engine bug; no value is shown)") from None
    return column if column.dtype == object else object_column(column.tolist())


def component_bounds(agg: Aggregate, max_rows: int) -> list[int]:
    """Public bounds on |N|, |T|, |Q| of an additive aggregate's raw tuple."""
    M = max(abs(agg.L), abs(agg.H))
    return [max_rows, max_rows * M, max_rows * M * M][: agg.raw_arity()]


@dataclass(frozen=True)
class GroupStats:
    """One group's exact statistics from the engine: key, units (private selection) and raw tuples by aggregate."""

    key: Any
    stats: Mapping[str, Sequence[int]]
    units: int | None = None


class GroupColumns(Sequence[Any]):
    """Groups ascending by key: ``keys``, per aggregate its raw components (``scalar``: numpy int64 or object
    columns; ``cells``: a quantile's cell-count tuples) and ``units`` (or None). Reads as a list of GroupStats."""

    def __init__(self, keys: list[Any], names: Sequence[str], scalar: Mapping[str, list[np.ndarray]],
                 cells: Mapping[str, list[tuple[int, ...]]], units: list[Any] | None) -> None:
        self.keys, self.names = keys, list(names)
        self.scalar, self.cells, self.units = dict(scalar), dict(cells), units

    def __len__(self) -> int:
        return len(self.keys)

    def _row(self, i: int) -> Any:
        stats = {n: (tuple(int(c[i]) for c in self.scalar[n]) if n in self.scalar else self.cells[n][i])
                 for n in self.names}
        return GroupStats(self.keys[i], stats, None if self.units is None else self.units[i])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("group index out of range")
        return self._row(i)

    def __iter__(self) -> Iterator[Any]:
        return (self._row(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GroupColumns({len(self)} groups, aggregates {self.names})"


@dataclass
class Gathered:
    """The release's view: keys in release order, raw components per additive aggregate (int64 where the public
    bounds allow, else Python ints), unit counts, quantile cells; a position may be a listed key without rows."""

    keys: list[Any]
    raw: dict[str, list[np.ndarray]]
    units: list[Any] | None
    cells: dict[str, list[tuple[int, ...]]]

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, pos: np.ndarray) -> "Gathered":
        idx = pos.tolist()
        return Gathered([self.keys[i] for i in idx], {n: [c[pos] for c in cs] for n, cs in self.raw.items()},
                        None if self.units is None else [self.units[i] for i in idx],
                        {n: [c[i] for i in idx] for n, c in self.cells.items()})


def _int64(values: Sequence[Any]) -> np.ndarray | None:
    """``values`` as int64, or None when one is not an int that fits (a wide tuple universe's index)."""
    try:
        arr = np.asarray(values)
    except (OverflowError, ValueError):
        return None
    return arr.astype(np.int64) if arr.dtype.kind in "iu" and (arr.size == 0 or arr.max() < 1 << 63) else None


def positions(ascending: Sequence[Any], wanted: Sequence[Any]) -> np.ndarray:
    """For each wanted key its position in the unique ``ascending`` keys, len(ascending) where it is absent
    (int64 keys in strictly ascending order: one binary search each; otherwise a dictionary)."""
    n = len(ascending)
    a, w = _int64(ascending), _int64(wanted)
    if a is None or w is None or not bool(np.all(a[1:] > a[:-1])):
        where = {k: i for i, k in enumerate(ascending)}
        return np.array([where.get(k, n) for k in wanted], dtype=np.int64)
    pos = np.searchsorted(a, w)
    hit = pos < n
    hit[hit] = a[pos[hit]] == w[hit]
    return np.where(hit, pos, n).astype(np.int64)


def count_absent(seen: Sequence[Any], listed: Sequence[Any]) -> int:
    """How many of the ``seen`` keys are not ``listed``."""
    a, w = _int64(seen), _int64(listed)
    if a is None or w is None:
        keep = set(listed)
        return sum(1 for k in seen if k not in keep)
    return int(np.count_nonzero(~np.isin(a, w)))


def gather(groups: Sequence[Any], aggs: Sequence[Aggregate], max_rows: int, keys: Sequence[Any] | None = None) -> Gathered:
    """The release's columns from a GroupColumns or a list of GroupStats; ``keys``: the public keys in release
    order (a key without a group gets zero statistics), None: every group, in order."""
    additive = [a for a in aggs if a.kind is not Kind.QUANTILE]
    quants = [a for a in aggs if a.kind is Kind.QUANTILE]
    if isinstance(groups, GroupColumns):
        n = len(groups)
        if keys is None:
            pos, out_keys = np.arange(n, dtype=np.int64), list(groups.keys)
        else:
            pos = positions(groups.keys, keys)  # n: the appended zero row
            out_keys = list(keys)
        raw = {}
        for agg in additive:
            cols = []
            for c, b in zip(groups.scalar[agg.name], component_bounds(agg, max_rows)):
                col = _as(c, b < INT64_SAFE)
                col = np.concatenate([col, np.zeros(1, dtype=col.dtype)]) if keys is not None else col
                cols.append(col[pos])
            raw[agg.name] = cols
        plist = pos.tolist()
        units = None
        if groups.units is not None:
            units = [groups.units[i] if i < n else 0 for i in plist]
        cells = {}
        for agg in quants:
            zero = (0,) * agg.raw_arity()
            src = groups.cells[agg.name]
            cells[agg.name] = [src[i] if i < n else zero for i in plist]
        return Gathered(out_keys, raw, units, cells)
    if keys is None:
        chosen: list[Any] = list(groups)
        out_keys = [g.key for g in chosen]
    else:
        by_key = {g.key: g for g in groups}
        chosen = [by_key.get(k) for k in keys]
        out_keys = list(keys)
    raw = {}
    for agg in additive:
        zero = (0,) * agg.raw_arity()
        rows = [zero if g is None or agg.name not in g.stats else tuple(g.stats[agg.name]) for g in chosen]
        comps = list(zip(*rows)) if rows else [()] * agg.raw_arity()
        raw[agg.name] = [np.array(c, dtype=np.int64) if b < INT64_SAFE else object_column(c)
                         for c, b in zip(comps, component_bounds(agg, max_rows))]
    units = None if keys is not None else [g.units for g in chosen]
    cells = {}
    for agg in quants:
        zero = (0,) * agg.raw_arity()
        cells[agg.name] = [zero if g is None or agg.name not in g.stats else tuple(g.stats[agg.name]) for g in chosen]
    return Gathered(out_keys, raw, units, cells)
