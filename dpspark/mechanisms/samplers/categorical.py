"""One draw from integer weights by exact inverse CDF: post-processing of already-private weights.

The weights w_0..w_{k-1} >= 0 are public (noisy) integers. With W = sum w and the cumulative sums
S_j = w_0 + ... + w_j, one uniform integer u in [1, W] selects j = min{j : S_j >= u}, so
Pr[j] = w_j / W exactly for an exact uniform u. The search is a fixed-step binary search: always
ceil(log2 k) comparisons, whatever u is. When W = 0 (every noisy count clipped to 0) the draw is a
uniform symbol, a data-independent default (RSSS Alg 3 leaves this case open).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

from dpspark.rng import RandomSource


def cumulative(weights: Sequence[int] | np.ndarray) -> np.ndarray | list[int]:
    """S_j = w_0 + ... + w_j: int64 numpy when the total fits (checked before summing), else Python ints."""
    arr = np.asarray(weights)
    if arr.size and arr.dtype != object and int(arr.max()) * arr.size < (1 << 62):
        return np.cumsum(arr.astype(np.int64))
    total, out = 0, []
    for w in arr.tolist():
        total += int(w)
        out.append(total)
    return out


def inverse_cdf(cum: np.ndarray | list[int], u: int) -> int:
    """min{j : cum[j] >= u} for 1 <= u <= cum[-1], in exactly ceil(log2 len(cum)) comparisons."""
    k = len(cum)
    pos = -1  # invariant: cum[pos] < u (cum[-1] read as 0)
    rounds = (k - 1).bit_length()  # ceil(log2 k): the steps 2^(r-1) + ... + 1 reach index k - 1
    step = 1 << (rounds - 1) if rounds else 0
    while step:
        probe = pos + step
        # past the end the CDF is the total >= u; read a real entry anyway to keep the work uniform
        value = int(cum[probe if probe < k else k - 1])
        if probe < k and value < u:
            pos = probe
        step >>= 1
    return pos + 1


def draw_index(weights: Sequence[int] | np.ndarray, rng: RandomSource) -> int:
    """A symbol j in [0, k) with probability w_j / W (uniform when W = 0); one uniform draw."""
    cum = cumulative(weights)
    k = len(cum)
    if k == 0:
        raise ValueError("no symbols to draw from")
    total = int(cum[-1])
    if total == 0:
        return rng.uniform(k) - 1
    return inverse_cdf(cum, rng.uniform(total))


def uniform_cdf_count(n: int, v: int, lam: int) -> Fraction:
    """Pr[rng.uniform(n) <= v] for the multiply-shift reduction of :mod:`dpspark.rng` (exact; v in [0, n]).

    uniform(n) = floor(X n / 2^L) + 1 with X uniform on [0, 2^L), L = bitlen(n) + lam (exact bits when n is
    a power of two). floor(X n / 2^L) < v iff X < v 2^L / n, so the count of such X is ceil(v 2^L / n).
    """
    if n & (n - 1) == 0:
        return Fraction(v, n)
    L = n.bit_length() + lam
    return Fraction(-((-v << L) // n), 1 << L)


def implemented_law(weights: Sequence[int], lam: int) -> list[Fraction]:
    """The exact law of :func:`draw_index` under the rng's reduction (tests; small k)."""
    cum = [int(c) for c in cumulative(weights)]
    k, total = len(cum), cum[-1]
    if total == 0:
        return [uniform_cdf_count(k, j + 1, lam) - uniform_cdf_count(k, j, lam) for j in range(k)]
    prev = [0] + cum[:-1]
    return [uniform_cdf_count(total, cum[j], lam) - uniform_cdf_count(total, prev[j], lam) for j in range(k)]
