"""Alg A.3 (Balcer-Vadhan Appendix A) offline: all r draws first, then every output by vectorised merges.

Alg A.3's i-th draw picks u_i uniform on [1, N_i], N_i = N - |A| - (i-1), and outputs the u_i-th
element of [1, N] \\ (A u {earlier outputs}). The u_i do not depend on the outputs, so they can all
be drawn first (:func:`dpspark.rng.uniform_many`, ``descending``: the law, and under the seeded
generator the values, of the draw-by-draw calls in the same order) and the outputs computed after.

In 0-based *free ranks* (the rank of an output among [1, N] \\ A), output i is x_i, the
(u_i - 1)-th element of [0, M) \\ {x_0..x_{i-1}}, M = N - |A|. A block of consecutive draws is
the same problem on the space its predecessors left free, so two solved neighbouring blocks
combine: a right-block value v (a rank in the space left free by the left block, whose values
sorted are L_0 < L_1 < ...) is the v-th free element, v + #{k : L_k - k <= v} (L_k - k counts the
free elements below L_k). Bottom-up over blocks of 1, 2, 4, ... draws, every level is one stable
row-wise sort of (P, 2s) arrays (each row two sorted runs: a merge); the last <= 64 blocks combine
pairwise with ``searchsorted``. Finally y = x + #{k : A_k - k <= x} over A sorted (0-based), and y + 1.

Exact integer arithmetic on uint64 throughout: every value is < M <= 2^64 or a padding draw's rank
(< the padded count); the padding draws (u = 0, after the last real draw) never move a real output,
since a block's outputs depend only on its own and earlier draws. Strict time: the level count is
ceil(log2) of the public r, every level touches the same number of elements, and nothing branches
on a drawn value (numpy's sorts and searches run in C over data of public size).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpspark.rng import RandomSource, uniform_many

U64 = np.uint64

#: top-level blocks combined pairwise by searchsorted (fewer means more padding, more means more numpy calls)
TOP_BLOCKS = 64


def sample_distinct_avoiding_batched(
    universe: int, taken: list[int], r: int, rng: RandomSource, *, progress: Callable[[str], None] | None = None
) -> list[int]:
    """Alg A.3's outputs, in draw order, for validated inputs: ``taken`` sorted distinct in [1, universe] <= 2^64.

    Same draws as :func:`dpspark.mechanisms.histogram.distinct.sample_distinct_avoiding` (one per output, bounds
    N - |A|, N - |A| - 1, ...), so the same outputs under the same seeded generator. The draws come in tenths,
    and ``progress`` gets the chunked sampler's lines, "empty bins: k0% of r draws" (public).
    """
    free = universe - len(taken)
    parts = []
    done = 0
    for q in range(1, 11):
        upto = r * q // 10
        parts.append(uniform_many(rng, free - done, upto - done, descending=True))  # u_i - 1, in [0, free - i)
        done = upto
        if progress is not None and q < 10 and r >= 10:
            progress(f"empty bins: {10 * q}% of {r} draws")
    x = free_ranks(np.concatenate(parts))
    if taken:
        a = np.array([t - 1 for t in taken], dtype=U64)  # 0-based: 2^64 itself fits
        below = a - np.arange(len(a), dtype=U64)  # free elements below each avoided element (non-decreasing)
        x = x + np.searchsorted(below, x, side="right").astype(U64)
    if universe < 1 << 64:
        return (x + U64(1)).tolist()
    return [v + 1 for v in x.tolist()]  # 2^64 itself is a possible output


def free_ranks(u: np.ndarray) -> np.ndarray:
    """x_i = the u_i-th (0-based) element of [0, inf) \\ {x_0..x_{i-1}}, for uint64 u (u_i < M - i keeps x_i < M)."""
    r = len(u)
    if r == 0:
        return np.zeros(0, dtype=U64)
    width = 1 << max(0, (r - 1).bit_length() - TOP_BLOCKS.bit_length() + 1)  # bottom block size: <= 64 blocks
    blocks = -(-r // width)
    size = blocks * width
    values = np.zeros(size, dtype=U64)  # padding draws u = 0 sit after every real draw
    values[:r] = u
    index = np.arange(size, dtype=np.int64)
    s = 1
    while s < width:
        values, index = _merge_level(values, index, s)
        s *= 2
    parts = [(values[b * width : (b + 1) * width], index[b * width : (b + 1) * width]) for b in range(blocks)]
    while len(parts) > 1:
        parts = [_merge_pair(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    values, index = parts[0]
    out = np.empty(size, dtype=U64)
    out[index] = values
    return out[:r]


def _merge_level(values: np.ndarray, index: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Combine every pair of neighbouring solved blocks of s draws (each block's values sorted, with draw indices)."""
    rows = len(values) // (2 * s)
    pairs = values.reshape(rows, 2 * s)
    left, right = pairs[:, :s], pairs[:, s:]
    below = left - np.arange(s, dtype=U64)  # free elements below each left value
    # stable: a left key equal to a right value sorts first, so it counts (L_k - k <= v)
    order = np.argsort(np.concatenate([below, right], axis=1), axis=1, kind="stable")
    where = np.empty_like(order)
    np.put_along_axis(where, order, np.broadcast_to(np.arange(2 * s), order.shape), axis=1)
    shift = (where[:, s:] - np.arange(s)).astype(U64)  # left values below each right value
    mapped = np.concatenate([left, right + shift], axis=1)
    merged = np.take_along_axis(mapped, order, axis=1).reshape(-1)
    return merged, np.take_along_axis(index.reshape(rows, 2 * s), order, axis=1).reshape(-1)


def _merge_pair(
    left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Combine two solved neighbouring blocks of any sizes (values sorted, with draw indices)."""
    lv, li = left
    rv, ri = right
    shift = np.searchsorted(lv - np.arange(len(lv), dtype=U64), rv, side="right")
    at = np.arange(len(rv)) + shift  # the right values' places in the merged order
    values = np.empty(len(lv) + len(rv), dtype=U64)
    index = np.empty(len(values), dtype=np.int64)
    rest = np.ones(len(values), dtype=bool)
    rest[at] = False
    values[at], index[at] = rv + shift.astype(U64), ri
    values[rest], index[rest] = lv, li
    return values, index
