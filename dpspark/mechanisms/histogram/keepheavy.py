"""KeepHeavy_M (Balcer-Vadhan Alg 6.1, Thm 6.2) and its exact simulation (Alg 6.4, Prop 6.5).

KeepHeavy runs BasicHistogram over all of X and keeps the bins strictly heavier
than the (n+1)-th largest noisy count. It is post-processing of BasicHistogram,
so under add/remove it is **eps~-DP** (Thm 6.2(i) says 2 eps~ for replacement).
:func:`keepheavy_reference` does exactly that and needs |X| small: tests only.

Alg 6.4 gets the same output law in time independent of |X|: noisy counts for
the nonzero bins S only, n+1 uniformly random distinct empty bins (Appendix A),
paired with the top n+1 order statistics of |X| - |S| iid copies of M(0, U)
(empty bins are iid, so a random assignment of the sorted values is exact).
With exact OrdSample (:func:`dpspark.mechanisms.histogram.ordstat.ord_sample`, exponential
bits) it is a test reference; SparseHistogram swaps in ApproxOrdSample.

Accuracy (Thm 6.2(ii)-(iii), Lemma 6.3; at most n nonzero bins under the relation):
with (a, beta1) per-query and (a', beta2) simultaneous for BasicHistogram over X,
per-query (a, beta1 + beta2) on counts > 2a', simultaneous (2a', beta2).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dpspark.noise import CountingMechanism
from dpspark.mechanisms.histogram.basic import noisy_counts
from dpspark.mechanisms.histogram.distinct_fast import sample_distinct_avoiding_chunked
from dpspark.mechanisms.histogram.inputs import CountsLike, check_beta, check_counts, check_mechanism, check_universe, keep_strictly_heavy
from dpspark.mechanisms.histogram.ordstat import ord_sample
from dpspark.mechanisms.histogram.result import AccuracyStatement, HistogramRelease, add_remove_statement, biased_draw_factor, histogram_accuracy
from dpspark.rng import RandomSource

#: order_statistics(m, t, rng) -> the top t of m iid M(0, U) values, descending
OrderStatistics = Callable[[int, int, RandomSource], list[int]]


def keepheavy_reference(
    counts: CountsLike, universe_size: int, n: int, mechanism: CountingMechanism, rng: RandomSource
) -> tuple[list[int], list[int]]:
    """Alg 6.1 literally: a noisy count for every x in X (ascending), keep those above the (n+1)-th largest."""
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=False)
    if size < n + 1:
        raise ValueError("KeepHeavy needs |X| >= n+1")
    keys, values = check_counts(counts, size, n)
    all_bins = list(range(size))
    ys = noisy_counts(all_bins, dict(zip(keys, values)), mechanism, rng)
    return keep_strictly_heavy(list(zip(all_bins, ys)), n + 1)


def heavy_with_sampled_empty_bins(
    keys: list[int],
    values: list[int],
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    rng: RandomSource,
    order_statistics: OrderStatistics,
    *,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[int], list[int]]:
    """Steps 2-6 of Alg 6.4 / 6.21 on validated inputs (keys ascending, values > 0).

    ``progress`` gets stage names and fractions of the public n+1 empty-bin draws only.
    """
    if progress is not None:
        progress("keep-heavy: noisy counts of the nonzero bins")
    ys = noisy_counts(keys, dict(zip(keys, values)), mechanism, rng)
    # Alg A.3 draw for draw (same outputs as distinct.sample_distinct_avoiding), chunked for large n
    chosen = sample_distinct_avoiding_chunked(universe_size, [k + 1 for k in keys], n + 1, rng, progress=progress)
    empty = [x - 1 for x in chosen]
    tops = order_statistics(universe_size - len(keys), n + 1, rng)
    return keep_strictly_heavy(list(zip(keys, ys)) + list(zip(empty, tops)), n + 1)


def exact_order_statistics(mechanism: CountingMechanism) -> OrderStatistics:
    """Exact OrdSample over F_{M,0} (test reference; Theta(m) bits per level)."""
    n = mechanism.n

    def draw(m: int, t: int, rng: RandomSource) -> list[int]:
        return ord_sample(m, t, lambda v: mechanism.scaled_cdf(0, v), n, rng)

    return draw


def keepheavy_simulation(
    counts: CountsLike,
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    rng: RandomSource,
    *,
    order_statistics: OrderStatistics | None = None,
    beta: Any = "1/20",
) -> HistogramRelease:
    """Alg 6.4: KeepHeavy's output law exactly, via exact OrdSample unless ``order_statistics`` is given."""
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=True)
    b = check_beta(beta)
    keys, values = check_counts(counts, size, n)
    sampler = order_statistics if order_statistics is not None else exact_order_statistics(mechanism)
    xs, ys = heavy_with_sampled_empty_bins(keys, values, size, n, mechanism, rng, sampler)
    # worst path: n mechanism draws, n+1 distinct-element draws, n exact binomial draws
    extra, _ = biased_draw_factor(3 * n + 1, rng.lam)
    privacy = add_remove_statement(
        mechanism.n,
        exp_eps=mechanism.exp_eps,
        bias_epsilon=extra,
        delta=Fraction(0),
        theorem="BV Thm 6.2(i) + Prop 6.5 under add/remove: post-processing of BasicHistogram over X",
    )
    return HistogramRelease(
        algorithm="KeepHeavy (Alg 6.4 exact simulation)",
        indices=tuple(xs),
        counts=tuple(ys),
        universe_size=size,
        n=n,
        privacy=privacy,
        accuracy=keepheavy_accuracy(mechanism, size, b, Fraction(0)),
        parameters={"mechanism": mechanism.describe(), "beta": str(b)},
    )


def _round_up(x: Fraction, bits: int = 64) -> Fraction:
    """The least multiple of 2^-bits that is >= x: a conservative failure probability with a short denominator.

    delta_SD can have a denominator of n log2(3|X|) bits; stating a slightly larger
    beta keeps manifests readable (and within the readers' size limits) and stays valid.
    """
    if x.denominator.bit_length() <= bits:
        return x
    scale = 1 << bits
    return Fraction(-((-x.numerator * scale) // x.denominator), scale)


def accuracy_at(mechanism: CountingMechanism, beta: Fraction, bits: int = 256) -> int:
    """``mechanism.accuracy(beta)``, the same value, via short dyadic brackets when beta's denominator is huge.

    With delta_SD in beta, its denominator has about 66 n bits and each of the
    accuracy search's comparisons multiplies by it (seconds at n = 10^6). accuracy()
    is non-increasing in beta, so a(up(beta)) <= a(beta) <= a(down(beta)) for the
    2^-bits roundings; when the two ends agree that is the value, else it is computed exactly.
    """
    if beta.denominator.bit_length() <= bits:
        return mechanism.accuracy(beta)
    scale = 1 << bits
    down = Fraction((beta.numerator * scale) // beta.denominator, scale)
    high = mechanism.accuracy(_round_up(beta, bits))
    if down > 0 and mechanism.accuracy(down) == high:
        return high
    return mechanism.accuracy(beta)


def keepheavy_accuracy(
    mechanism: CountingMechanism, universe_size: int, beta: Fraction, extra: Fraction, note: str = ""
) -> AccuracyStatement:
    """Thm 6.2(ii)-(iii) with beta1 = beta2 = (beta - extra)/2; ``extra`` adds failure mass (SD, mixing).

    Per-query (a_M(beta1), beta) on counts > 2 a_M(beta2/|X|); simultaneous (2 a_M(beta2/|X|), beta2 + extra).
    """
    rest = beta - extra
    if rest <= 0:
        raise ValueError("beta must exceed the algorithm's extra failure probability (gamma + delta)")
    half = rest / 2
    a = accuracy_at(mechanism, half)
    a_sim = accuracy_at(mechanism, half / universe_size)
    return histogram_accuracy(
        a_per_query=a,
        beta_per_query=beta,
        per_query_above=2 * a_sim,
        a_simultaneous=2 * a_sim,
        beta_simultaneous=min(beta, _round_up(half + extra)),
        notes=("beta split: beta1 = beta2 = (beta - extra)/2; " + note).strip(),
    )
