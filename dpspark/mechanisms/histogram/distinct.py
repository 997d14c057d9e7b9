"""Uniformly random distinct elements of [1, N] avoiding a set (Balcer-Vadhan Appendix A, Alg A.3).

Lemma A.1: for A a subset of [1, N] and r <= N - |A|, the sequence y_1..y_r
returned below is uniform over all sequences of r distinct elements of
[1, N] \\ A. Draw i picks u uniform on [1, N_i], N_i = N - |A| - (i-1), and maps
it to the u-th smallest element of [1, N] \\ T (T = A plus earlier draws); that
map is a bijection [1, N_i] -> [1, N] \\ T, so each step is uniform given the past.

Strict time: every draw runs exactly ceil(log2 N) binary-search rounds, each a
rank query (bisect) on the sorted list T, whatever u and T are. The sorted list
stands in for the order-statistic tree; insertions are memmoves, fine for
|A| + r up to about 10^6.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterable

from dpspark.rng import RandomSource


def search_rounds(universe: int) -> int:
    """The fixed number of binary-search rounds per draw: ceil(log2 N) (0 when N = 1)."""
    return (universe - 1).bit_length()


def kth_missing(taken: list[int], universe: int, k: int) -> int:
    """The k-th smallest element of [1, universe] not in the sorted list ``taken``.

    Runs exactly ``search_rounds(universe)`` rounds (the smallest y with
    y - rank(y) >= k, rank(y) = #{t in taken : t <= y}).
    """
    lo, hi = 1, universe  # invariant: the answer lies in [lo, hi]
    for _ in range(search_rounds(universe)):
        mid = (lo + hi) >> 1
        if mid - bisect_right(taken, mid) >= k:
            hi = mid
        else:
            lo = mid + 1 if mid < hi else hi
    return lo


def sample_distinct_avoiding(universe: int, avoid: Iterable[int], r: int, rng: RandomSource) -> list[int]:
    """Return r uniformly random distinct elements of [1, universe] \\ avoid, in draw order (Alg A.3).

    ``avoid`` must be distinct elements of [1, universe]; requires r <= universe - |avoid|.
    Each draw costs one ``rng.uniform(N_i)`` and exactly ceil(log2 universe) rank queries.
    """
    if isinstance(universe, bool) or not isinstance(universe, int) or universe < 1:
        raise ValueError("universe size N must be an int >= 1")
    taken = sorted(avoid)
    for i in range(1, len(taken)):
        if taken[i] == taken[i - 1]:
            raise ValueError("the avoided set must not contain duplicates")
    if taken and (taken[0] < 1 or taken[-1] > universe):
        raise ValueError("the avoided set must lie inside [1, N]")
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise ValueError("r must be an int >= 0")
    free = universe - len(taken)
    if r > free:
        raise ValueError("r exceeds the number of elements left after removing the avoided set")
    out: list[int] = []
    for i in range(r):
        u = rng.uniform(free - i)
        y = kth_missing(taken, universe, u)
        insort(taken, y)
        out.append(y)
    return out
