"""PureSparseHistogram_{M, gamma} (Balcer-Vadhan Algorithm 6.9, Theorems 6.10/6.11), pure DP.

With probability 1 - gamma release SparseHistogram_{M, delta_s}(D); otherwise a
sample of P: draw x_1..x_n uniformly from X^n, give each distinct x_i a count
uniform on **{0, ..., n}** (docs/balcer-vadhan-notes.md §P: {1..n} gives the empty
histogram probability 0 and breaks full support), release the nonzero ones.

Privacy under add/remove, re-derived (Lemma 3.2' with eps = eps' = eps~):
* KeepHeavy is eps~-DP (post-processing of BasicHistogram; one count moves by one).
* SparseHistogram is within SD delta_SD = n|X|(n+2)/2^S of KeepHeavy pointwise.
* Output range R: partial vectors with at most n nonzero bins, counts in [1, n].
  P has full support on R and min_r P(r) >= (3|X|)^-n (docs/balcer-vadhan-notes.md §P; exact tests).
* For each r: (1-g) a_D(r) + g P(r) <= e^eps~ [(1-g) a_D'(r) + g P(r)]
  + (1-g)(1 + e^eps~) delta_SD - (e^eps~ - 1) g P(r), and the last two terms are
  <= 0 as soon as delta_SD <= tanh(eps~/2) (g/(1-g)) min_r P(r). With
  e^eps~ = p/q exactly, tanh(eps~/2) = (p-q)/(p+q), so we take
      delta_s = ((p-q)/(p+q)) * (gamma/(1-gamma)) * (3|X|)^-n      (exact Fraction)
  and S = the smallest s_bits with n|X|(n+2)/2^S <= delta_s.
Result: **pure eps~-DP** (no doubling), eps = ln(p/q) + bias_epsilon(k) with k
the public worst-case count of mod-N draws on one path (docs/balcer-vadhan-notes.md §E12).
Replacement neighbours: 2 eps~.

Contribution bounds (engine: :class:`dpspark.mechanisms.histogram.mechanism.PureSparseHistogram`): with
k keys per unit and up to c rows per key the algorithm runs here with n = N = k c n_units, and a unit
is at most k c single-row steps, every intermediate dataset having total <= N; group privacy gives
e^eps = (p/q)^(k c) and k c times the per-row bias (tests/unit/histogram/test_pure_sparse_rows.py
checks the exact law for a unit of c = 2 rows, and that the c = 1 claim p/q fails).

Accuracy (Thm 6.10(ii)-(iii)): Thm 6.2's bounds with extra failure mass
gamma + delta_SD. Strict time: both branches are always computed and the coin
only selects, so neither time nor ``progress`` reveals the branch; progress
messages name a stage and a fraction of its public work (n+1 empty-bin draws,
n levels, 2n mixing draws), never a data-derived count or a level's result.

Speed (outputs unchanged): ``mode="adaptive"`` decides each order-statistic level
from certified binomial-CDF bounds on the top 256 bits of its U
(:mod:`dpspark.mechanisms.histogram.binsample_cdf`, :mod:`dpspark.mechanisms.histogram.lazy_bits`), and the
empty bins are drawn with :mod:`dpspark.mechanisms.histogram.distinct_fast` (from 4096 draws on, all
at once and placed by vectorised merges, :mod:`dpspark.mechanisms.histogram.distinct_batch`); both give
the exact evaluation's outputs under the seeded generator, in O(n) big-integer work of bounded size.
P's 2n draws come in batches (:func:`dpspark.rng.uniform_many`, the per-draw law and seeded values).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import gmpy2
import numpy as np

from dpspark.noise import CountingMechanism
from dpspark.exact import parse_rational
from dpspark.mechanisms.histogram.inputs import CountsLike, check_beta, check_counts, check_mechanism, check_universe, is_power_of_two
from dpspark.mechanisms.histogram.keepheavy import heavy_with_sampled_empty_bins, keepheavy_accuracy
from dpspark.mechanisms.histogram.ordstat import BinSampler
from dpspark.engine.timing import pad_until
from dpspark.mechanisms.histogram.result import HistogramRelease, add_remove_statement, biased_draw_factor
from dpspark.mechanisms.histogram.sparse import approx_order_statistics, sd_bound, s_bits_for, sparse_bias_draws
from dpspark.rng import RandomSource, uniform_many


def check_gamma(gamma: Any) -> Fraction:
    """The mixing probability gamma, an exact rational in (0, 1)."""
    value = parse_rational(gamma, "gamma")
    if not 0 < value < 1:
        raise ValueError("gamma must lie in (0, 1)")
    return value


def mixing_min_probability_bound(universe_size: int, n: int, values: int = 1) -> Fraction:
    """(3|X| V)^-n, a lower bound on min_r P(r) over the output range (docs/balcer-vadhan-notes.md §P).

    ``values`` = V: 1 for counts alone; with sums, the product of the sums' grid sizes (P draws each released
    key's sums uniformly, :mod:`dpspark.mechanisms.histogram.pure_sparse_sums`).
    GMP computes the power (about 66 n bits at |X| = 2^64): CPython's pow takes ~20 s at n = 10^6.
    """
    return Fraction(1, int(gmpy2.mpz(3 * universe_size * values) ** n))


def mixing_delta(exp_eps: Fraction, gamma: Fraction, universe_size: int, n: int, values: int = 1) -> Fraction:
    """delta_s = ((p-q)/(p+q)) (gamma/(1-gamma)) (3|X| V)^-n: Lemma 3.2' condition with eps = eps' = eps~."""
    p, q = exp_eps.numerator, exp_eps.denominator
    return Fraction(p - q, p + q) * gamma / (1 - gamma) * mixing_min_probability_bound(universe_size, n, values)


def random_histogram(
    universe_size: int, n: int, rng: RandomSource, *, progress: Callable[[str], None] | None = None
) -> tuple[list[int], list[int]]:
    """A sample of P (Alg 6.9 step 2): n uniform positions, counts uniform on {0..n}, nonzero kept, ascending.

    Always exactly 2n draws (all positions, then all counts): position i's count is used
    if i is the first occurrence of its position. ``progress`` gets "mixing sample: k0% of
    2n draws" at every tenth (public). The draws come in batches (:func:`dpspark.rng.uniform_many`:
    the law, and under the seeded generator the values, of one ``rng.uniform`` per draw) and the
    first occurrences from one stable sort (``np.unique``).
    """
    positions: list[np.ndarray] = [np.zeros(0, dtype=np.uint64 if universe_size <= 1 << 64 else object)]
    counts: list[np.ndarray] = [np.zeros(0, dtype=np.uint64)]
    done = 0
    for tenth in range(1, 11):
        upto = 2 * n * tenth // 10
        if upto > done and done < n:
            stop = min(upto, n)
            positions.append(_uniform_positions(universe_size, stop - done, rng))
            done = stop
        if upto > done:
            counts.append(uniform_many(rng, n + 1, upto - done))
            done = upto
        if progress is not None and tenth < 10:
            progress(f"mixing sample: {10 * tenth}% of {2 * n} draws")
    xs, first = np.unique(np.concatenate(positions), return_index=True)  # ascending; first occurrences
    ys = np.concatenate(counts)[first]
    kept = ys > 0
    return xs[kept].tolist(), ys[kept].tolist()


def _uniform_positions(universe_size: int, count: int, rng: RandomSource) -> np.ndarray:
    """``count`` draws uniform(|X|) - 1: uint64 in one batch, or Python ints (an object array) beyond 2^64."""
    if universe_size <= 1 << 64:
        return uniform_many(rng, universe_size, count)
    return np.array([rng.uniform(universe_size) - 1 for _ in range(count)], dtype=object)


def pure_sparse_bias_draws(n: int, universe_size: int, mechanism: CountingMechanism, gamma: Fraction) -> int:
    """Public worst-case number of mod-N (biased) uniform draws on one path."""
    return (
        sparse_bias_draws(n, mechanism)
        + (0 if is_power_of_two(gamma.denominator) else 1)
        + (0 if is_power_of_two(universe_size) else n)
        + (0 if is_power_of_two(n + 1) else n)
    )


def pure_sparse_histogram(
    counts: CountsLike,
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    gamma: Any,
    rng: RandomSource,
    *,
    beta: Any = "1/20",
    mode: str = "adaptive",
    progress: Callable[[str], None] | None = None,
    bin_sampler: BinSampler | None = None,
    min_seconds: float | None = None,
    stats: dict[str, int] | None = None,
) -> HistogramRelease:
    """Alg 6.9 with the {0..n} mixing fix: a pure eps~-DP sparse histogram, ascending by index.

    ``mode`` ("adaptive" or "exact") changes speed only, never outputs. ``bin_sampler``
    and ``stats`` are test/benchmark hooks. ``min_seconds`` pads the wall-clock time
    (see :mod:`dpspark.engine.timing`).
    """
    start = time.monotonic()
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=True)
    b = check_beta(beta)
    g = check_gamma(gamma)
    keys, values = check_counts(counts, size, n)
    delta_s = mixing_delta(mechanism.exp_eps, g, size, n)
    s_bits = s_bits_for(n, size, delta_s)
    sd = sd_bound(n, size, s_bits)
    if progress is not None:
        progress(  # public parameters only (s_bits depends on n, |X|, eps and gamma)
            f"pure-sparse: n = {n:,}; simulating the largest noisy counts among the empty keys "
            f"(exact arithmetic on {s_bits:,}-bit numbers; the time depends only on n and |X|)"
        )
    sampler = approx_order_statistics(
        mechanism, s_bits, mode=mode, bin_sampler=bin_sampler, progress=progress, stats=stats
    )
    sparse_out = heavy_with_sampled_empty_bins(keys, values, size, n, mechanism, rng, sampler, progress=progress)
    random_out = random_histogram(size, n, rng, progress=progress)
    coin = rng.uniform(g.denominator)  # <= numerator with probability gamma
    xs, ys = random_out if coin <= g.numerator else sparse_out
    extra, _ = biased_draw_factor(pure_sparse_bias_draws(n, size, mechanism, g), rng.lam)
    privacy = add_remove_statement(
        mechanism.n,
        exp_eps=mechanism.exp_eps,
        bias_epsilon=extra,
        delta=Fraction(0),
        theorem="BV Thm 6.10(i) via Lemma 3.2' (eps = eps' = eps~) under add/remove",
        notes="delta_SD = n|X|(n+2)/2^s_bits <= ((p-q)/(p+q)) (gamma/(1-gamma)) (3|X|)^-n",
    )
    accuracy = keepheavy_accuracy(mechanism, size, b, g + sd, "extra = gamma + delta_SD")
    pad_until(start, min_seconds)
    if progress is not None:
        progress("pure-sparse: done")
    return HistogramRelease(
        algorithm="PureSparseHistogram",
        indices=tuple(xs),
        counts=tuple(ys),
        universe_size=size,
        n=n,
        privacy=privacy,
        accuracy=accuracy,
        parameters={"mechanism": mechanism.describe(), "gamma": str(g), "s_bits": s_bits, "beta": str(b), "mode": mode},
    )
