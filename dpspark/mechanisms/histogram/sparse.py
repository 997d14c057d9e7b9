"""SparseHistogram_{M, delta} (Balcer-Vadhan Algorithm 6.21, Theorem 6.8), approximate DP.

Alg 6.4 with exact OrdSample replaced by ApproxOrdSample at s = 2^s_bits, the
smallest power of two with n |X| (n+2) / s <= delta. Requires |X| >= 2n+1.

Theorem 6.8(i): SD(SparseHistogram(D), KeepHeavy(D)) <= delta_SD := n |X| (n+2) / s
(Prop 6.19's sum_v m (t_v+1)/s with m <= |X|, t = n+1, over n levels, then
post-processing). Under add/remove KeepHeavy is eps~-DP, so for every T
Pr[A(D) in T] <= Pr[KH(D) in T] + delta_SD <= e^eps~ Pr[KH(D') in T] + delta_SD
<= e^eps~ Pr[A(D') in T] + (1 + e^eps~) delta_SD:
**(eps~, (1 + p/q) delta_SD)-DP** (Thm 6.8(ii), which has 2 eps~ for replacement).
The mod-N bias (docs/balcer-vadhan-notes.md §E12) of at most k = n + (n+1) non-power-of-two
draws on any path adds bias_epsilon(k) to eps and a factor (1 + 2k 2^-lam) to delta.
Accuracy: Thm 6.2 plus delta_SD of extra failure probability.
Time: Õ(n (T_M + log d + T_F) + n log|X| log(n|X|/delta)); ``mode="adaptive"``
gives outputs identical to ``mode="exact"`` (docs/balcer-vadhan-notes.md §E11).

Strict time (docs/balcer-vadhan-notes.md §E10): every loop has a public bound (|S| <= n noisy
counts, n+1 distinct draws of ceil(log2|X|) rounds, n order-statistic levels,
ApproxBinSample's doubling up to 2t). Iteration counts may vary below those
bounds (|S| differs by one between neighbours; early exits), and Python
big-integer timing is data-dependent, so wall-clock time is *not* hidden:
the threat model excludes an adversary who times the driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dpspark.noise import CountingMechanism
from dpspark.exact import clog2
from dpspark.mechanisms.histogram.binsample_cdf import approx_bin_sample_cdf
from dpspark.mechanisms.histogram.inputs import CountsLike, check_beta, check_counts, check_mechanism, check_universe, is_power_of_two
from dpspark.mechanisms.histogram.keepheavy import OrderStatistics, heavy_with_sampled_empty_bins, keepheavy_accuracy
from dpspark.mechanisms.histogram.lazy_bits import LazyBits
from dpspark.mechanisms.histogram.ordstat import BinSampler, LazyBinSampler, approx_bin_sample, approx_ord_sample
from dpspark.engine.timing import pad_until
from dpspark.mechanisms.histogram.result import HistogramRelease, add_remove_statement, biased_draw_factor
from dpspark.mechanisms.histogram.stability import check_delta
from dpspark.rng import RandomSource

MODES = ("adaptive", "exact")


def s_bits_for(n: int, universe_size: int, delta: Fraction) -> int:
    """Smallest S with n |X| (n+2) / 2^S <= delta."""
    need = n * universe_size * (n + 2) * delta.denominator
    return clog2(-(-need // delta.numerator))


def sd_bound(n: int, universe_size: int, s_bits: int) -> Fraction:
    """delta_SD = n |X| (n+2) / 2^s_bits, the exact bound of Thm 6.8(i)."""
    return Fraction(n * universe_size * (n + 2), 1 << s_bits)


def sparse_bias_draws(n: int, mechanism: CountingMechanism) -> int:
    """Public worst-case number of mod-N (biased) uniform draws on one path of Alg 6.21."""
    return (0 if is_power_of_two(mechanism.d) else n) + (n + 1)


def approx_order_statistics(
    mechanism: CountingMechanism,
    s_bits: int,
    *,
    mode: str = "adaptive",
    bin_sampler: BinSampler | None = None,
    progress: Callable[[str], None] | None = None,
    stats: dict[str, int] | None = None,
) -> OrderStatistics:
    """ApproxOrdSample over F_{M,0} with s = 2^s_bits, exact or adaptive comparisons (identical outputs)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    n = mechanism.n
    lazy_sampler: LazyBinSampler | None = None
    if bin_sampler is None:
        if mode == "adaptive":  # CDF bounds on the top bits of U; identical outputs (binsample_cdf)

            def lazy_sampler(m: int, num: int, den: int, t: int, u: LazyBits) -> int:
                return approx_bin_sample_cdf(m, num, den, s_bits, t, u, stats)

        else:
            s = 1 << s_bits

            def bin_sampler(m: int, num: int, den: int, t: int, u: int) -> int:
                return approx_bin_sample(m, num, den, s, t, u)

    def draw(m: int, t: int, rng: RandomSource) -> list[int]:
        return approx_ord_sample(
            m, t, lambda v: mechanism.scaled_cdf(0, v), n, s_bits, rng,
            bin_sampler=bin_sampler, lazy_sampler=lazy_sampler, progress=progress,
        )

    return draw


def sparse_core(
    keys: list[int],
    values: list[int],
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    rng: RandomSource,
    order_statistics: OrderStatistics,
) -> tuple[list[int], list[int]]:
    """Alg 6.21 steps 2-6 on validated inputs."""
    return heavy_with_sampled_empty_bins(keys, values, universe_size, n, mechanism, rng, order_statistics)


def sparse_histogram(
    counts: CountsLike,
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    delta: Any,
    rng: RandomSource,
    *,
    beta: Any = "1/20",
    mode: str = "adaptive",
    progress: Callable[[str], None] | None = None,
    bin_sampler: BinSampler | None = None,
    min_seconds: float | None = None,
) -> HistogramRelease:
    """Alg 6.21: release the bins strictly heavier than the (n+1)-th, ascending by index.

    ``delta`` bounds SD to KeepHeavy; the released statement's delta is (1 + p/q) delta_SD
    (times the bias factor). ``bin_sampler`` is a test hook (exact law injection).
    ``min_seconds`` pads the wall-clock time (see :mod:`dpspark.engine.timing`).
    """
    start = time.monotonic()
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=True)
    b = check_beta(beta)
    dl = check_delta(delta)
    keys, values = check_counts(counts, size, n)
    s_bits = s_bits_for(n, size, dl)
    sd = sd_bound(n, size, s_bits)
    sampler = approx_order_statistics(mechanism, s_bits, mode=mode, bin_sampler=bin_sampler, progress=progress)
    xs, ys = sparse_core(keys, values, size, n, mechanism, rng, sampler)
    pad_until(start, min_seconds)
    extra, grow = biased_draw_factor(sparse_bias_draws(n, mechanism), rng.lam)
    privacy = add_remove_statement(
        mechanism.n,
        exp_eps=mechanism.exp_eps,
        bias_epsilon=extra,
        delta=(1 + mechanism.exp_eps) * sd * grow,
        theorem="BV Thm 6.8(ii) under add/remove: (eps~, (1 + e^eps~) delta_SD)-DP",
        notes="delta_SD = n|X|(n+2)/2^s_bits",
    )
    return HistogramRelease(
        algorithm="SparseHistogram",
        indices=tuple(xs),
        counts=tuple(ys),
        universe_size=size,
        n=n,
        privacy=privacy,
        accuracy=keepheavy_accuracy(mechanism, size, b, sd, "extra = delta_SD"),
        parameters={"mechanism": mechanism.describe(), "s_bits": s_bits, "delta_requested": str(dl), "beta": str(b), "mode": mode},
    )
