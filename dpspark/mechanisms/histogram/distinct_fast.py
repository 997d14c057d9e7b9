"""Alg A.3 (Balcer-Vadhan Appendix A) on a chunked sorted list: same draws, same outputs, O(sqrt) updates.

:func:`dpspark.mechanisms.histogram.distinct.sample_distinct_avoiding` keeps T (the avoided set
plus earlier draws) as one sorted Python list: each insertion moves up to |T|
pointers (Theta(n^2) bytes over n draws, minutes at n = 10^6) and each draw runs
64 rank queries. Here the output is the same function of the same draws
(``rng.uniform(N_i)``, in the same order), computed differently:

* the u-th smallest element of [1, N] \\ T is u + j, where j = #{i : T[i] - i - 1 < u}
  (T sorted, 0-based; T[i] - i - 1 counts the free elements below T[i], non-decreasing in i);
* T is stored as sorted chunks of at most 2B elements; a numpy uint64 array holds, per
  chunk, the free count below its first element, so the chunk is one ``searchsorted``
  and the position inside it a binary search of exactly ceil(log2(2B + 1)) rounds.

Strict time: every draw does one ``rng.uniform``, one ``searchsorted`` over at most
(|A| + r)/B + 1 chunks (public bound), a fixed-round binary search, and O(#chunks)
vectorised updates. Requires N <= 2^64 (uint64 counts); larger universes use the
reference implementation. Tests compare both implementations draw for draw.

From ``BATCH_MIN`` draws on (a public bound on r), the same outputs come from
:mod:`dpspark.mechanisms.histogram.distinct_batch`: all r draws in one batch, then O(r log^2 r)
vectorised merges instead of r Python-level steps (about 1 s at r = 10^6).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from math import isqrt

import numpy as np

from dpspark.mechanisms.histogram.distinct import sample_distinct_avoiding
from dpspark.mechanisms.histogram.distinct_batch import sample_distinct_avoiding_batched
from dpspark.rng import RandomSource

#: least chunk size B: chunks hold B..2B elements (a split happens above 2B); B grows as sqrt(2r)
CHUNK = 512

#: from this many draws on, :mod:`dpspark.mechanisms.histogram.distinct_batch` computes the same outputs offline
BATCH_MIN = 1 << 12


def sample_distinct_avoiding_chunked(
    universe: int,
    avoid: Iterable[int],
    r: int,
    rng: RandomSource,
    *,
    chunk: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[int]:
    """Same output as :func:`dpspark.mechanisms.histogram.distinct.sample_distinct_avoiding` for the same ``rng`` state.

    ``progress`` gets "empty bins: k0% of r draws" at every tenth of the public r.
    """
    avoid = list(avoid)
    if chunk is None:  # sqrt(2r) (public; |A| <= r for KeepHeavy) balances O(B) inserts and O(#chunks) updates
        chunk = max(CHUNK, isqrt(2 * r) if isinstance(r, int) and r > 0 else 0)
    if isinstance(universe, bool) or not isinstance(universe, int) or universe > 1 << 64 or chunk < 1:
        return sample_distinct_avoiding(universe, avoid, r, rng)
    if isinstance(r, bool) or not isinstance(r, int) or r < 0 or r > universe - len(avoid) or universe < 1:
        return sample_distinct_avoiding(universe, avoid, r, rng)  # the reference raises the right error
    taken = sorted(avoid)
    if any(taken[i] == taken[i - 1] for i in range(1, len(taken))) or (taken and (taken[0] < 1 or taken[-1] > universe)):
        return sample_distinct_avoiding(universe, avoid, r, rng)
    if r >= BATCH_MIN:  # public r: all draws first, outputs by vectorised merges (same outputs)
        return sample_distinct_avoiding_batched(universe, taken, r, rng, progress=progress)
    free = universe - len(taken)
    rounds = search_rounds(chunk)
    out: list[int] = []
    if not taken:
        if r == 0:
            return out
        u = rng.uniform(free)
        _count_below([], 0, rounds)  # the same fixed rounds as every other draw
        out.append(u)  # nothing taken: the u-th free element is u (u may be 2^64 only here)
        taken = out[:]
    chunks = [taken[i : i + chunk] for i in range(0, len(taken), chunk)]
    # keys[c] = free elements below chunk c's first element = first - (its global index) - 1 (< 2^64)
    keys = np.array([c[0] - i * chunk - 1 for i, c in enumerate(chunks)], dtype=np.uint64)
    one = np.uint64(1)
    uint = np.uint64
    ticks = {r * q // 10: 10 * q for q in range(1, 10)} if progress is not None and r >= 10 else {}
    for i in range(len(out), r):
        if i in ticks:
            progress(f"empty bins: {ticks[i]}% of {r} draws")  # type: ignore[misc]
        u = rng.uniform(free - i)
        c = int(keys.searchsorted(uint(u), side="left")) - 1
        below = c < 0  # u lies below the first element of T: y = u, at the very front
        c = max(c, 0)
        block = chunks[c]
        start = block[0] - int(keys[c]) - 1  # global index of block[0]
        local = _count_below(block, start + 1 + u, rounds)  # searched even when `below`: fixed work
        if below:
            local = 0
        j = start + local if not below else 0
        y = u + j
        block.insert(local, y)
        if local == 0:
            keys[c] = uint(y - j - 1)
        keys[c + 1 :] -= one
        if len(block) > 2 * chunk:
            head_index = j - local  # global index of block[0]
            chunks[c : c + 1] = [block[:chunk], block[chunk:]]
            keys = np.insert(keys, c + 1, uint(block[chunk] - (head_index + chunk) - 1))
        out.append(y)
    return out


def search_rounds(chunk: int) -> int:
    """The fixed number of in-chunk binary-search rounds per draw: enough for 2B + 1 candidate counts."""
    return (2 * chunk + 1).bit_length()


def _count_below(block: list[int], base: int, rounds: int) -> int:
    """#{i : block[i] - i < base} for sorted ``block`` whose first element counts, in exactly ``rounds`` rounds."""
    lo, hi = 1, len(block)  # the count lies in [lo, hi] (when block[0] counts)
    for _ in range(rounds):
        mid = (lo + hi) >> 1
        if mid < hi and block[mid] - mid < base:
            lo = mid + 1
        else:
            hi = mid
    return lo
