"""FastSample's public tables, computed in O(t) small steps instead of 2t big powers (issue 24 §5).

Both tables are exact functions of the public parameters (p, q, t, g, n); how they are computed does not
change a single value, so every draw stays identical. With d' = (p+q) p^t, M = (g-1)(n+1), D = (n+1) g and
T_a = q^a p^(t+1-a) (a = 1..t+1), FastSample's offsets are

    F'(c + j) = T_(-j) - T_(t+1)             for -t <= j < 0,
    F'(c + j) = d' - T_(j+1) + T_(t+1)       for 0 <= j < t.

* :func:`dpspark.noise.fastsample.cdf_offsets` (kept there: compact lookups need it and load nothing
  else): the scalar path's table M F'(c + j), j in [-t, t), exactly. T_(a+1) = T_a q / p is one exact
  division and one product by a small integer per entry, where the old code raised p and q to powers
  for every entry.
* :func:`batch_weights`: the batched sampler's wtab, the exact floors of
  W(j) = 2^63 (j d' + M F'(j)) / d = 2^63 (j + M V_j) / D for j in [-t-1, t], where V_j = F'(j)/d' is
  R_(-j) - R_(t+1) or 1 - R_(j+1) + R_(t+1) with R_a = T_a / d' = (q/p)^(a-1) q/(p+q).
  The R_a are carried in B-bit fixed point, X_1 = floor(2^B q/(p+q)) and X_(a+1) = floor(X_a q/p), so
  0 <= 2^B R_a - X_a < a (each step loses less than one unit and shrinks the earlier error by q/p < 1).
  A combination of two X's is then within t + 1 units of 2^B V_j, which brackets 2^63 (j + M V_j)/D in an
  interval of width < 2^64 M (t+2) / (D 2^B) < 2^-128 (M < D); where both ends have the same floor, that
  floor is W's, exactly. Otherwise (a public value within 2^-128 of an integer, never seen) the
  entry is recomputed from the exact big-integer formula. Integers only, no floating point.

At k c = 500 (t = 17,497, d of 157,572 bits) the old wtab took 34-57 s of big powers; this takes well under
a second. ``tests/unit/noise/test_fastsample_tables.py`` compares both tables with the direct formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpspark.noise import bigint

#: Guard bits of the fixed-point R_a beyond 64 + the error's bit length.
GUARD_BITS = 128


def _direct_weight(j: int, p: int, q: int, t: int, g: int, n: int) -> int:
    """floor(2^63 (j d' + M F'(j)) / d) from the big-integer formula (the rare fallback, and the reference)."""
    P, Q = bigint.big(p), bigint.big(q)
    dprime = (P + Q) * P**t
    mult = (g - 1) * (n + 1)
    if j < -t:
        scaled: Any = 0
    elif j >= t:
        scaled = mult * dprime
    elif j < 0:
        scaled = mult * (Q ** (-j) * P ** (t + 1 + j) - Q ** (t + 1))
    else:
        scaled = mult * (dprime - Q ** (j + 1) * P ** (t - j) + Q ** (t + 1))
    d = (n + 1) * g * dprime
    return int(((j * dprime + scaled) << 63) // d)


def batch_weights(p: int, q: int, t: int, g: int, n: int) -> np.ndarray:
    """wtab of FastSample's batched sampler: floor(W(j)) for j in [-t-1, t], int64, exactly (module docstring)."""
    mult, big_d = (g - 1) * (n + 1), (n + 1) * g
    err = t + 2
    bits = 64 + err.bit_length() + GUARD_BITS  # interval width 2^64 M err / (D 2^bits) < 2^-GUARD_BITS
    one = 1 << bits
    xs = [0] * (t + 2)  # xs[a] ~ 2^bits R_a, a = 1 .. t+1
    x = (q << bits) // (p + q)
    for a in range(1, t + 2):  # public bound t + 1
        xs[a] = x
        x = x * q // p
    last = xs[t + 1]
    slack = mult * err
    den = big_d << bits
    out = [((-t - 1) << 63) // big_d]  # j = -t-1: F' = 0, W = 2^63 j / D exactly
    for j in range(-t, t):  # public bound 2t
        v = xs[-j] - last if j < 0 else one - xs[j + 1] + last
        num = (j << bits) + mult * v
        lo = ((num - slack) << 63) // den
        hi = ((num + slack) << 63) // den
        out.append(lo if lo == hi else _direct_weight(j, p, q, t, g, n))
    out.append(((t + mult) << 63) // big_d)  # j = t: F' = d', W = 2^63 (t + M) / D exactly
    return np.array(out, dtype=np.int64)
