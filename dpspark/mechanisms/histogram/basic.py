"""BasicHistogram_{M, X'} (Balcer-Vadhan Algorithm 5.1, Theorem 5.2).

Noisy count M(c_x, U_x) for every bin x of a public, data-independent set X',
with independent U_x. Privacy under add/remove (one count moves by one, all
other bins have identical output laws): if M is eps~-DP for counting queries
(Def 4.2, e^{eps~} = p/q), the release is **eps~-DP** (Theorem 5.2(i), which
states 2 eps~ for replacement = two add/remove steps). The bins' U_x are
independent, so only the changed bin's single draw carries the rng's reduction bias:
eps = ln(p/q) + bias_epsilon(1) (0 extra when d is a power of two).
Accuracy: per-query (a_M(beta), beta); simultaneous (a_M(beta/|X'|), beta) by a
union bound (Theorem 5.2(ii)-(iii)).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from dpspark.noise import CountingMechanism
from dpspark.mechanisms.histogram.inputs import (
    _as_int,
    CountsLike,
    check_beta,
    check_counts,
    check_mechanism,
    check_universe,
    is_power_of_two,
)
from dpspark.mechanisms.histogram.result import AccuracyStatement, HistogramRelease, PrivacyStatement, add_remove_statement, biased_draw_factor, histogram_accuracy
from dpspark.rng import RandomSource


def noisy_counts(bins: list[int], counts: dict[int, int], mechanism: CountingMechanism, rng: RandomSource) -> list[int]:
    """M(c_x, U_x) for each x in ``bins`` (in the given order), one fresh U_x each.

    One batched call (``mechanism.draw_many``): under a seeded source the same
    stream blocks and outputs as one ``draw`` per bin, in order.
    """
    return mechanism.draw_many([counts.get(x, 0) for x in bins], rng).tolist()


def basic_histogram(
    counts: CountsLike,
    bins: Iterable[Any],
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    rng: RandomSource,
    *,
    beta: Any = "1/20",
) -> HistogramRelease:
    """Release (x, M(c_x, U_x)) for every x in the public set ``bins``, ascending by index.

    Every bin of ``bins`` is released, zeros included. Data bins outside ``bins`` are ignored.
    """
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=False)
    b = check_beta(beta)
    keys, values = check_counts(counts, size, n)
    public = sorted({_as_int(x, 'bins') for x in bins})
    if public and (public[0] < 0 or public[-1] >= size):
        raise ValueError("every public bin must lie in [0, |X|)")
    ys = noisy_counts(public, dict(zip(keys, values)), mechanism, rng)
    return HistogramRelease(
        algorithm="BasicHistogram",
        indices=tuple(public),
        counts=tuple(ys),
        universe_size=size,
        n=n,
        privacy=basic_privacy(mechanism, rng.lam),
        accuracy=basic_accuracy(mechanism, len(public), b),
        parameters={"mechanism": mechanism.describe(), "bins": len(public), "beta": str(b)},
    )


def basic_privacy(mechanism: CountingMechanism, lam: int) -> PrivacyStatement:
    """eps~-DP under add/remove (Theorem 5.2(i)), plus the changed bin's draw bias."""
    extra, _ = biased_draw_factor(0 if is_power_of_two(mechanism.d) else 1, lam)
    return add_remove_statement(
        mechanism.n,
        exp_eps=mechanism.exp_eps,
        bias_epsilon=extra,
        delta=Fraction(0),
        theorem="BV Thm 5.2(i) under add/remove: one count changes by one (Lemma 4.4)",
    )


def basic_accuracy(mechanism: CountingMechanism, bins: int, beta: Fraction) -> AccuracyStatement:
    """Per-query (a_M(beta), beta) and simultaneous (a_M(beta/bins), beta), exact."""
    a = mechanism.accuracy(beta)
    a_sim = mechanism.accuracy(beta / bins) if bins > 1 else a
    return histogram_accuracy(
        a_per_query=a,
        beta_per_query=beta,
        per_query_above=-1,
        a_simultaneous=a_sim,
        beta_simultaneous=beta,
        notes="simultaneous by a union bound over the released bins",
    )
