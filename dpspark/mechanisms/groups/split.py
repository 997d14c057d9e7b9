"""The split of the additive aggregates' pool over their statistics (docs/groups.md §D): public, data-free.

Quantiles and a separate key selection take their equal shares first (algorithm.py); the additive
aggregates' pool is split over the distinct noisy statistics they read (a count of rows, a centred sum,
...; one statistic may serve several aggregates). Every additive aggregate a has an error model: its noise, as a standard deviation, is sqrt(sum_s (c_as / f_s)^2)
for the parts s it reads, with f_s the part's fraction of epsilon and c_as the part's sensitivity times
its weight in a's formula (a quantile: its rank error, c = 1). Alone with the whole budget, the same
aggregate would reach solo_a = min over splits = (sum_s c_as^(2/3))^(3/2) (a plain sum alone: its own
sensitivity, which is never worse). The split minimises the largest ratio w_a sd_a / solo_a: every
aggregate pays the same relative price for sharing the budget (w_a = 1 unless ``weights`` says
otherwise). Laplace noise scales as 1/epsilon, so the ratio does not depend on the budget itself.

The minimisation is a small convex problem solved by a fixed number of multiplicative (mirror-descent)
steps on a smoothed maximum, in floats: it only *chooses* the shares. The shares are then rounded to
exact multiples of 1/SPLIT_DENOMINATOR (each at least one) whose sum is exactly 1, and every law is
calibrated and accounted on those exact rationals (docs/groups.md §D).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping, Sequence

#: shares are multiples of 1/SPLIT_DENOMINATOR
SPLIT_DENOMINATOR = 1 << 10
#: fixed number of steps, learning rate and smoothing of the maximum (a log-sum-exp at this temperature)
STEPS, RATE, TEMPERATURE = 3000, 0.5, 200.0


def solo(coefs: Mapping[int, float]) -> float:
    """The aggregate's sd with the whole budget split optimally among its own parts: (sum c^(2/3))^(3/2)."""
    return sum(c ** (2 / 3) for c in coefs.values()) ** 1.5  # heuristic: chooses shares only


def minimax_fractions(parts: int, models: Sequence[Mapping[int, float]], norms: Sequence[float]) -> list[float]:
    """Fractions f (sum 1) minimising max_a sqrt(sum_s (c_as / f_s)^2) / norm_a (floats; a choice, not a bound)."""
    f = [1.0 / parts] * parts  # heuristic: chooses shares only
    used = {s for m in models for s in m}
    if len(used) < parts:
        raise ValueError("every part must appear in some aggregate's model")
    for step in range(STEPS):  # public constant: no data, no randomness
        var = [sum((c / f[s]) ** 2 for s, c in m.items()) for m in models]  # heuristic
        logs = [0.5 * math.log(v) - math.log(n) for v, n in zip(var, norms)]  # heuristic
        top = max(logs)
        pis = [math.exp(TEMPERATURE * (x - top)) for x in logs]  # heuristic
        total = sum(pis)
        push = [0.0] * parts  # heuristic
        for pi, v, m in zip(pis, var, models):
            for s, c in m.items():
                push[s] += (pi / total) * (c / f[s]) ** 2 / v  # share of a's variance due to part s
        rate = RATE / math.sqrt(1 + step / 8)  # heuristic: decreasing steps settle the oscillation
        f = [x * math.exp(rate * p) for x, p in zip(f, push)]  # heuristic
        z = sum(f)
        f = [x / z for x in f]
    return f


def exact_shares(fractions: Sequence[float]) -> list[Fraction]:
    """Exact multiples of 1/SPLIT_DENOMINATOR, each >= 1/SPLIT_DENOMINATOR, summing to exactly 1."""
    n = len(fractions)
    units = [max(1, round(x * SPLIT_DENOMINATOR)) for x in fractions]  # heuristic -> exact ints
    while sum(units) != SPLIT_DENOMINATOR:  # at most n adjustments of the largest share (public)
        i = max(range(n), key=lambda j: (units[j], -j))
        units[i] += SPLIT_DENOMINATOR - sum(units) if units[i] + SPLIT_DENOMINATOR - sum(units) >= 1 else 1 - units[i]
    return [Fraction(u, SPLIT_DENOMINATOR) for u in units]


def split(parts: int, models: Sequence[Mapping[int, float]], norms: Sequence[float] | None = None) -> list[Fraction]:
    """The exact share of each part (module docstring); ``norms``: each model's solo_a / w_a (default: solo_a)."""
    if parts == 1:
        return [Fraction(1)]
    return exact_shares(minimax_fractions(parts, models, [solo(m) for m in models] if norms is None else norms))
