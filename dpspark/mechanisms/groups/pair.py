"""The distance pair: a column's count and sum from two noisy statistics that share one budget (docs/groups.md §D).

Per row with a value v in [L, H] (fixed point, D = H - L), the distances u = v - L and w = H - v are both in
[0, D] and add up to D. Per group, U = sum u and W = sum w give N = (U + W) / D and T = U + L N. On a grid
G = D / g0 the pair is rounded *jointly*:

    a = round(U / G) = floor((2 U g0 + D) / 2D),      b = N g0 - a,

so a + b = N g0 exactly and both lie in [0, N g0]. A unit adds m <= c rows to a group: N grows by m and U by
some du in [0, m D], so a grows by da in [0, m g0] (round(x + t) - round(x) <= ceil(t), t = du g0 / D <= m g0
an integer) and b by m g0 - da >= 0: **|da| + |db| = m g0 <= c g0, whatever the values** - the joint
sensitivity of the pair is that of ONE statistic, where releasing the count and a centred sum independently
pays for two. Both are released with FastSample at e^eps~ = p/q per grid unit on [0, rows g0]; a unit moves
the two coordinates of k groups by at most c g0 grid units in total, so the pair is
**pure ln((p/q)^(k c g0)) + bias_epsilon(2k)** (2k changed draws). This is the l_inf-norm (box) mechanism of
the (count, centred sum) pair written as two independent l_1 coordinates (in two dimensions the box is a
rotated diamond): each of the two released statistics gets the *whole* share.

Values. N~ = (a~ + b~) / g0, U~ = G a~, T~ = U~ + L N~, so T~ - T = (H Z_a + L Z_b) / g0 + G r with |r| <= 1/2
(the rounding of a). A sum's noise is one Laplace of the share on H (and L) where a count and a centred sum
at half the share each give two: at [0, 100], Lap(100/eps) against Lap(100/eps) + Lap(100/eps).
Mean: L + D p~ with p~ = clamp(a~ / s~, 0, 1), s~ = a~ + b~; when N >= 1 and s~ > 0, on |Z_a| <= e_a, |Z_b| <= e_b,
|p~ - U/(D N)| <= max(e_a, e_b) / s~ + 1 / (2 max(g0, s~ - e_a - e_b)) (|a/s - a~/s~| = |Z_a b - a Z_b| / (s s~),
and s = N g0 >= max(g0, s~ - e_a - e_b)): the stated bound, from released values only.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.laws import GAMMA_BITS, exp_eps_below, pure_accuracy
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource, bias_epsilon

#: grid steps per row range D (the rounding of U is at most D / (2 PAIR_GRID))
PAIR_GRID = 2
_INT64_SAFE = 1 << 62


class PairLaw:
    """The distance pair of one column and clip range (module docstring)."""

    kind = "pure"
    always: Fraction | None = None

    def __init__(self, D: int, c: int, k: int, max_rows: int, epsilon: Fraction, lam: int, g0: int = PAIR_GRID) -> None:
        from dpspark.noise.fastsample import FastSample

        if D < 1:
            raise GroupsError("a pair needs hi > lo")
        self.D, self.c, self.k, self.lam, self.g0 = D, c, k, lam, g0
        self.G = Fraction(D, g0)
        target = epsilon - bias_epsilon(2 * k, lam)
        if target <= 0:
            raise GroupsError("epsilon share too small for pure noise")
        self.exp_eps = exp_eps_below(target / (k * c * g0))
        self.n = max(1, max_rows * g0)
        self.mech = FastSample(n=self.n, exp_eps=self.exp_eps, gamma=Fraction(1, 1 << GAMMA_BITS))
        self.int64 = 2 * max_rows * D * g0 + D < _INT64_SAFE and self.n < _INT64_SAFE
        self.delta = c * D  # the U-units a unit moves the pair by at most (for the choice's score)

    def epsilon(self) -> LogEpsilon:
        """ln((p/q)^(k c g0)) + bias_epsilon(2k): k groups, c g0 grid units in total over both coordinates."""
        return LogEpsilon(self.exp_eps ** (self.k * self.c * self.g0), bias_epsilon(2 * self.k, self.lam))

    def grid(self, U: Any, N: Any) -> tuple[Any, Any]:
        """(a, b) = (round(U / G), N g0 - a), exactly (ints, or int64/object arrays)."""
        a = (2 * U * self.g0 + self.D) // (2 * self.D)
        return a, N * self.g0 - a

    def release_many(self, U: np.ndarray, N: np.ndarray, rng: RandomSource) -> tuple[np.ndarray, np.ndarray]:
        """(a~, b~) for every group: all the a draws, then all the b draws (a public order)."""
        from dpspark.noise.counting_base import BATCH_MAX_N

        if len(U) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if self.int64:
            U, N = np.asarray(U).astype(np.int64), np.asarray(N).astype(np.int64)
        a, b = self.grid(U, N)
        out = []
        for x in (a, b):
            if self.n <= BATCH_MAX_N and x.dtype != object:
                out.append(self.mech.draw_many(x.astype(np.int64), rng))
            else:
                out.append(np.array([self.mech.draw(int(v), rng) for v in x.tolist()], dtype=object))
        return out[0], out[1]

    def error(self, beta: Fraction) -> int:
        """Grid units e with Pr[|Z| > e] <= beta for each coordinate (a certified accuracy bound)."""
        return pure_accuracy(self.mech, self.exp_eps, beta)

    def describe(self) -> dict[str, Any]:
        return {"noise": "pure", "pair": "distances to lo and to hi, rounded jointly", "grid": str(self.G),
                "g0": self.g0, "exp_eps": str(self.exp_eps), "fastsample": self.mech.describe()}
