"""PureSparseHistogram with sums: keys, noisy counts and noisy sums over a huge universe, pure DP (docs/groups.md §H).

**Ideal mechanism** (call it KH+): for every key x of X draw N~_x = M(N_x) (the counting mechanism on [0, n])
and, per sum j, S~_jx = M_j(a_jx) (a counting mechanism on the sum's shifted grid [0, A_j], V_j = A_j + 1 points,
a_jx the key's grid value, ``zero`` for a key without rows); release the keys whose noisy counts are strictly
above the (n+1)-th largest, with their counts and sums. It is post-processing of independent per-key
mechanisms, so when one neighbour step (add/remove one unit) moves at most k keys, each count by at most c
and each sum's grid value by at most g_j, KH+ is pure DP with the exact ratio
    e^eps~ = (p/q)^(k c) prod_j (p_j/q_j)^(k g_j).

**Sampler** (the sparse branch): BV Alg. 6.21 on the counts (:func:`heavy_with_sampled_empty_bins`, within
statistical distance delta_SD = n|X|(n+2)/2^S of KeepHeavy, Thm 6.8(i)), then the split "observed key /
sampled empty key" (a released key is observed iff it has rows: the empty bins are drawn avoiding them).
An observed key's sums come from its own draw M_j(a_jx); a sampled empty key's from a pool of n+1 draws
M_j(zero). Given the released keys and counts, KH+'s sums are independent with exactly these laws (the sum
noise is independent of the count noise, and a key without rows has grid value ``zero``), so the sums add no
statistical distance: |Pr[sparse(D) = r] - Pr[KH+(D) = r]| <= delta_SD for every output r.

**Mixing** (BV Alg. 6.9, docs/balcer-vadhan-notes.md §L/§P): with probability gamma release a sample of P
instead: n uniform keys, each distinct one a count uniform on {0..n} and sums uniform on their grids, the
nonzero counts kept. Output range: at most n keys, counts in [1, n], sum j in [0, A_j]. For r with k >= 1 keys,
P(r) >= surj(n, k) |X|^-n (n+1)^-k V^-k >= (3|X|)^-n V^-n (§P) with V = prod_j V_j, and P(empty) >= (n+1)^-n,
so min P >= (3|X| V)^-n (exact tests: tests/unit/histogram/test_pure_sparse_sums.py). By §L with
eps = eps' = eps~, the mixture is **pure eps~-DP** as soon as
    delta_SD <= tanh(eps~/2) (gamma/(1-gamma)) (3|X| V)^-n,
which fixes S (:func:`~dpspark.mechanisms.histogram.sparse.s_bits_for`). The lemma is applied once to the
whole neighbour step (the SD bound holds for every dataset of total <= n), so no group-privacy chain is needed.

**rng bias**: every mod-N draw moves each path's probability by a factor in [(1-a), (1+a)] (a = 2^-lam), so
the ratio bound grows by e^bias_epsilon(K), K the public worst-case number of such draws on one path.

**Strict time**: both branches are always computed and the coin only selects; the sparse branch draws the sums
of every observed key (|S| <= n, the loop the counts already make) and n+1 pool sums per statistic; P always
draws n sums per statistic. Which released key reads which draw is a numpy gather.

**Accuracy** (per key x and value, add/remove): Pr[x released and its value off by more than a] <=
Pr[|M(v) - v| > a] + gamma + delta_SD (the mixing branch and the SD), so each value's bar is its law's
accuracy at beta - gamma - delta_SD; a released empty key's sum is within the bar of 0, its true sum.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.engine.timing import pad_until
from dpspark.mechanisms.histogram.inputs import check_counts, check_mechanism, check_universe, is_power_of_two
from dpspark.mechanisms.histogram.keepheavy import heavy_with_sampled_empty_bins
from dpspark.mechanisms.histogram.ordstat import BinSampler
from dpspark.mechanisms.histogram.pure_sparse import check_gamma, mixing_delta, pure_sparse_bias_draws, random_histogram
from dpspark.mechanisms.histogram.result import add_remove_statement, biased_draw_factor
from dpspark.mechanisms.histogram.sparse import approx_order_statistics, sd_bound, s_bits_for
from dpspark.noise import CountingMechanism
from dpspark.privacy import PrivacyStatement
from dpspark.rng import RandomSource


@dataclass(frozen=True)
class SumLaw:
    """One released sum per key: ``mechanism`` on the shifted grid [0, A] (V = A + 1 points).

    ``steps``: the most one neighbour step moves one key's grid value (g); ``zero``: the grid value of a key
    without rows (its true sum, 0).
    """

    mechanism: CountingMechanism
    steps: int
    zero: int

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, CountingMechanism):
            raise TypeError("SumLaw.mechanism must be a dpspark.noise.CountingMechanism")
        for name in ("steps", "zero"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"SumLaw.{name} must be an int")
        if self.steps < 1 or not 0 <= self.zero <= self.mechanism.n:
            raise ValueError("SumLaw: steps >= 1 and zero in [0, A]")
        if self.mechanism.n >= 1 << 62:
            raise ValueError("SumLaw: the grid [0, A] must have A < 2^62 (batched exact draws)")

    @property
    def values(self) -> int:
        """V, the number of grid points a released sum can take."""
        return self.mechanism.n + 1


def grid_values(laws: Sequence[SumLaw]) -> int:
    """V = prod_j V_j: the sums' factor in the mixing bound (3|X| V)^-n."""
    out = 1
    for law in laws:
        out *= law.values
    return out


def ideal_exp_eps(mechanism: CountingMechanism, laws: Sequence[SumLaw], k: int = 1, c: int = 1) -> Fraction:
    """e^eps~ of KH+ for a step moving <= k keys, each count by <= c, each sum j by <= steps_j (exact)."""
    out = mechanism.exp_eps ** (k * c)
    for law in laws:
        out *= law.mechanism.exp_eps ** (k * law.steps)
    return out


def sums_bias_draws(n: int, universe_size: int, mechanism: CountingMechanism, gamma: Fraction,
                    laws: Sequence[SumLaw]) -> int:
    """Public worst-case number of mod-N draws on one path: the counts' (Alg. 6.9) plus, per sum, <= n observed
    draws and n+1 pool draws (when d_j is not a power of two) and P's n uniform sums (when V_j is not)."""
    out = pure_sparse_bias_draws(n, universe_size, mechanism, gamma)
    for law in laws:
        out += (0 if is_power_of_two(law.mechanism.d) else 2 * n + 1) + (0 if is_power_of_two(law.values) else n)
    return out


def random_histogram_with_sums(
    universe_size: int, n: int, values: Sequence[int], rng: RandomSource, *,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[int], list[int], list[list[int]]]:
    """A sample of P with sums: :func:`random_histogram`, then per sum n uniform draws on [0, V_j - 1] (always n),
    the i-th released key taking the i-th: independent uniform sums for every released key."""
    xs, ys = random_histogram(universe_size, n, rng, progress=progress)
    sums = []
    for v in values:
        draws = [rng.uniform(v) - 1 for _ in range(n)]
        sums.append(draws[: len(xs)])
    return xs, ys, sums


def split_heavy(
    keys: list[int], values: list[int], universe_size: int, n: int, mechanism: CountingMechanism,
    rng: RandomSource, order_statistics: Any, *, progress: Callable[[str], None] | None = None,
) -> tuple[list[int], list[int], np.ndarray]:
    """Alg. 6.21's released keys and counts, and for each the position of its observed key in ``keys`` (-1: a
    sampled empty key; those are drawn avoiding ``keys``, so membership decides)."""
    xs, ys = heavy_with_sampled_empty_bins(keys, values, universe_size, n, mechanism, rng, order_statistics,
                                           progress=progress)
    position = {x: i for i, x in enumerate(keys)}
    return xs, ys, np.array([position.get(x, -1) for x in xs], dtype=np.int64)


def sparse_sums(observed: np.ndarray, laws: Sequence[SumLaw], grids: Sequence[Sequence[int]], n: int,
                rng: RandomSource) -> list[list[int]]:
    """Per sum: every observed key's draw M_j(a_jx) and n+1 pool draws M_j(zero), then each released key's (an
    observed key its own, the i-th released empty key the i-th pool draw)."""
    empty = observed < 0
    rank = np.cumsum(empty) - 1  # the i-th empty key reads pool draw i (at most n+1 released)
    out = []
    for law, grid in zip(laws, grids):
        own = law.mechanism.draw_many(list(grid), rng)
        pool = law.mechanism.draw_many([law.zero] * (n + 1), rng)
        own_pick = own[np.where(empty, 0, observed)] if len(own) else np.zeros(len(observed), dtype=np.int64)
        out.append(np.where(empty, pool[np.clip(rank, 0, n)], own_pick).tolist())
    return out


@dataclass(frozen=True)
class SumsRelease:
    """Released keys ascending, their noisy counts, per sum the released grid values in [0, A_j], the statement.

    ``failure`` = gamma + delta_SD: each value's bar is its law's accuracy at beta - failure.
    """

    indices: tuple[int, ...]
    counts: tuple[int, ...]
    sums: tuple[tuple[int, ...], ...]
    privacy: PrivacyStatement
    failure: Fraction
    parameters: dict[str, Any] = field(default_factory=dict)


def plan_sums(n: int, universe_size: int, mechanism: CountingMechanism, laws: Sequence[SumLaw], gamma: Fraction,
              k: int = 1, c: int = 1) -> tuple[int, Fraction]:
    """(S, delta_SD): the order statistics' precision and the SD it guarantees (public parameters only)."""
    delta_s = mixing_delta(ideal_exp_eps(mechanism, laws, k, c), gamma, universe_size, n, grid_values(laws))
    s_bits = s_bits_for(n, universe_size, delta_s)
    return s_bits, sd_bound(n, universe_size, s_bits)


def pure_sparse_sums(
    counts: tuple[Sequence[int], Sequence[int]],
    grids: Sequence[Sequence[int]],
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    laws: Sequence[SumLaw],
    gamma: Any,
    rng: RandomSource,
    *,
    k: int = 1,
    c: int = 1,
    units: int | None = None,
    mode: str = "adaptive",
    progress: Callable[[str], None] | None = None,
    bin_sampler: BinSampler | None = None,
    min_seconds: float | None = None,
) -> SumsRelease:
    """KH+ within delta_SD mixed with P (module docstring): pure DP under add/remove of a step that moves <= k
    keys, each count by <= c and each sum j by <= laws[j].steps grid units; the relation is AddRemove(units).

    ``counts``: the observed keys' counts; ``grids[j][i]``: the grid value in [0, A_j] of the i-th observed key
    (ascending by key) for sum j. ``mode`` changes speed only; ``bin_sampler`` is a test hook.
    """
    start = time.monotonic()
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=True)
    g = check_gamma(gamma)
    keys, values = check_counts(counts, size, n)
    if not isinstance(counts, tuple) or [int(x) for x in counts[0]] != keys:  # grids are aligned with the input
        raise ValueError("counts: give (keys, counts) with the observed keys ascending, each with a count >= 1")
    if len(grids) != len(laws) or any(len(col) != len(keys) for col in grids):
        raise ValueError("grids: one grid value per observed key for every sum law")
    for law, col in zip(laws, grids):
        if any(not 0 <= v <= law.mechanism.n for v in col):
            raise ValueError("grids: every grid value must lie in [0, A] of its law")
    s_bits, sd = plan_sums(n, size, mechanism, laws, g, k, c)
    sampler = approx_order_statistics(mechanism, s_bits, mode=mode, bin_sampler=bin_sampler, progress=progress)
    xs, ys, observed = split_heavy(keys, values, size, n, mechanism, rng, sampler, progress=progress)
    sums = sparse_sums(observed, laws, grids, n, rng)
    mix = random_histogram_with_sums(size, n, [law.values for law in laws], rng, progress=progress)
    coin = rng.uniform(g.denominator)  # <= numerator with probability gamma
    out_x, out_y, out_s = mix if coin <= g.numerator else (xs, ys, sums)
    extra, _ = biased_draw_factor(sums_bias_draws(n, size, mechanism, g, laws), rng.lam)
    privacy = add_remove_statement(
        n if units is None else units,
        exp_eps=ideal_exp_eps(mechanism, laws, k, c),
        bias_epsilon=extra,
        delta=Fraction(0),
        theorem="KeepHeavy with sums (BV Alg. 6.4 + independent per-key sums) within delta_SD (Thm 6.8(i)), mixed "
                "with a full-support P (Alg. 6.9, Lemma 3.2' with eps = eps' = eps~) under add/remove",
        notes="delta_SD = n|X|(n+2)/2^s_bits <= ((p-q)/(p+q)) (gamma/(1-gamma)) (3|X| V)^-n, V = prod_j V_j",
    )
    pad_until(start, min_seconds)
    return SumsRelease(
        indices=tuple(out_x), counts=tuple(out_y), sums=tuple(tuple(col) for col in out_s), privacy=privacy,
        failure=g + sd,
        parameters={"gamma": str(g), "s_bits": s_bits, "mode": mode, "values": [law.values for law in laws]},
    )
