"""How an ``answers`` batch is aggregated: value histograms for many row-level sums of one column.

A batch of row-level sums (no ``unit_column``) over the same column, scale, null rule and filter differ only
in their clip range [lo_j, hi_j] (a row the filter or the null rule drops has value 0 in every one of them). With L = min lo_j and H = max hi_j, every such sum is an exact function of
the histogram of v = clip(round(x * 2^b), L, H) over rows, because clip(clip(r, L, H), lo_j, hi_j) =
clip(r, lo_j, hi_j) when [lo_j, hi_j] lies in [L, H]:

    sum_rows clip(r, lo_j, hi_j) = lo_j * #{v < lo_j} + sum{v : lo_j <= v <= hi_j} + hi_j * #{v > hi_j}.

The histogram has at most H - L + 1 bins, a public bound (:data:`HIST_MAX_VALUES`), so its size and the
driver's work never depend on the data beyond that bound. This lets 10^4 sums over a few columns run as
one pass that aggregates (group, value) pairs instead of 10^4 decimal sums per row. Everything else
(counts, filtered sums, per-unit clipping) is a derived column of the one :class:`SumsStage` pass.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Sequence

from dpspark.engine.numeric import NullRule
from dpspark.engine.predicate import Predicate
from dpspark.mechanisms.answers.queries import QueryKind, Scalar

#: largest histogram (H - L + 1 values) a group may have; wider clip ranges use derived columns
HIST_MAX_VALUES = 1 << 20
#: a column needs at least this many sums to be worth a histogram
HIST_MIN_MEMBERS = 2


@dataclass(frozen=True)
class HistGroup:
    """Row-level sums of one column at one scale, answered from the histogram of clip(round(x 2^b), L, H)."""

    column: str
    scale_bits: int
    L: int
    H: int
    members: tuple[int, ...]
    nulls: NullRule = NullRule()
    filter: Predicate | None = None


def split(scalars: Sequence[Scalar], unit_column: str | None) -> tuple[list[HistGroup], list[int]]:
    """(histogram groups, indexes of the scalars computed as derived columns); data-free."""
    if unit_column is not None:
        return [], list(range(len(scalars)))
    by: dict[tuple, list[int]] = {}
    for j, s in enumerate(scalars):
        if s.kind is QueryKind.SUM and s.column is not None:
            by.setdefault((s.column, s.scale_bits, s.nulls, s.filter), []).append(j)
    groups: list[HistGroup] = []
    grouped: set[int] = set()
    for (col, bits, nulls, filt), js in by.items():
        L = min(scalars[j].lo for j in js)
        H = max(scalars[j].hi for j in js)
        if len(js) >= HIST_MIN_MEMBERS and H - L + 1 <= HIST_MAX_VALUES and max(abs(L), abs(H)) < 1 << 52:
            groups.append(HistGroup(col, bits, L, H, tuple(js), nulls, filt))
            grouped.update(js)
    return groups, [j for j in range(len(scalars)) if j not in grouped]


def totals_from_histogram(values: Sequence[int], counts: Sequence[int], group: HistGroup,
                          scalars: Sequence[Scalar]) -> dict[int, int]:
    """Exact sum over rows of clip(v, lo_j, hi_j) for every member j, from the histogram (v -> count)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    vs = [int(values[i]) for i in order]
    cs = [int(counts[i]) for i in order]
    n_cum = [0, *accumulate(cs)]
    s_cum = [0, *accumulate(v * c for v, c in zip(vs, cs))]
    out: dict[int, int] = {}
    for j in group.members:
        lo, hi = scalars[j].lo, scalars[j].hi
        a = bisect_left(vs, lo)   # values < lo
        b = bisect_right(vs, hi)  # values <= hi
        out[j] = lo * n_cum[a] + (s_cum[b] - s_cum[a]) + hi * (n_cum[-1] - n_cum[b])
    return out
