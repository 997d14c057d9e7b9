"""StabilityHistogram_{M, tau} (Balcer-Vadhan Algorithm 5.4, Theorem 5.5), approximate DP.

Noisy counts only for the nonzero bins S = supp(D), released only if above the
threshold tau = min{b in [0, n] : F_{M,1}(b) >= ceil(d (1 - delta))}, so
Pr[M(1, U) > tau] = (d - F_{M,1}(tau)) / d =: delta_M <= delta, exactly.

Privacy under add/remove [derived from Thm 5.5(i)]: one bin's count moves by one.
* Both counts positive: that bin is released through M on both sides, eps~-DP.
* 1 <-> 0: on the side with count 1 the bin appears only if M(1, U) > tau
  (probability delta_M); conditioned on it not appearing the outputs have the
  same law, so Pr[A(D) in T] <= Pr[A(D') in T] + delta_M in both directions.
Hence **(eps~, delta_M)-DP**, with the changed bin's one mod-d draw adding
bias_epsilon(1) to eps and a factor (1 + 2^-lam) to delta_M.

Replacement (one unit moves from bin x to bin y != x) is **(2 eps, delta)-DP**,
(eps, delta) the add/remove statement above: tighter than the generic two-step
group-privacy bound (2 eps, (1 + e^eps) delta), and what the manifest states.
Derivation. Write B(c) for one bin's output law (absent, or M(c, U) if > tau;
absent for c = 0). Bins are independent coordinates and all bins but x, y keep
their law, so the hockey-stick divergence H_k(P||Q) = sum_o max(0, P(o) - k Q(o))
at k = e^(2 eps) of the whole output equals that of the pair (B_x, B_y). Per
coordinate, for counts c, c+1 >= 1: B(c) <= e^eps B(c+1) and B(c+1) <= e^eps B(c)
pointwise (post-processing of M); B(0) is the point mass on "absent" and
B(1) puts mass d1 = Pr[M(1,U) > tau] <= delta on "present". The pair moves
(a, b) -> (a-1, b+1):
* a >= 2 and b >= 1: both coordinates pure, H = 0.
* a = 1, b = 0: P = B(1) x absent, Q = absent x B(1); H(P||Q) = d1 +
  max(0, (1 - d1)(1 - k)) = d1, and the same the other way.
* a = 1, b >= 1 (and, symmetrically, a >= 2, b = 0): P = B(1) x B(b),
  Q = absent x B(b+1). H(P||Q) = d1 + sum_w max(0, (1-d1) B(b)(w) - k B(b+1)(w))
  = d1, since B(b) <= e^eps B(b+1). H(Q||P) = sum_w max(0, B(b+1)(w) - k (1-d1) B(b)(w))
  <= max(0, 1 - e^eps (1 - d1)) <= d1, since B(b) >= e^-eps B(b+1) and
  1 - e^eps (1 - d1) - d1 = (1 - e^eps)(1 - d1) <= 0.
So H <= d1 <= delta in every case, i.e. (2 eps, delta)-DP (the (2 eps, 2 delta_M)
of composing two (eps, delta_M) coordinates is valid but looser). The bound is
attained: the pair (1, 0) -> (0, 1) has H = d1 exactly.
tests/unit/histogram/test_stability_replacement.py enumerates the exact law at small n.

Contribution bound c = ``rows_per_key`` > 1 (a unit adds up to c to one key's count) [derived]:
tau is set at count c, tau = min{b : F_{M,c}(b) >= ceil(d (1 - delta))}, and
delta_c = Pr[M(c, U) > tau]. For one key whose count moves from a to a + e, 1 <= e <= c:
* a >= 1: M(a, U) and M(a + e, U) have pointwise ratio <= (p/q)^e <= (p/q)^c (e steps of
  Def 4.2), and thresholding is post-processing: (c eps~, 0).
* a = 0: the key appears only if M(e, U) > tau, with probability <= delta_c, because M is
  stochastically increasing in its count (F_{M,c}(z) = (z+1) d' + (g-1)(n+1) F'(z - c) with F'
  non-decreasing: F_{M,c}(z) is non-increasing in c), so (0, delta_c).
Hence **(c eps~, delta_c)-DP per key** (the statement returned, e^eps = (p/q)^c), plus the key's
one draw's bias; a unit moving k keys composes to (k c eps~, k delta_c)
(:mod:`dpspark.mechanisms.histogram.contribution`). The tighter replacement delta below is proved for
c = 1 only; with c > 1 the generic group-privacy replacement applies.
tests/unit/histogram/test_stability_rows.py checks it on the exact law, with the mutant that sets tau at
count 1.

FastSample inside: its uniform component alone gives Pr[M(1,U) > b] >= gamma (n-b)/(n+1),
so gamma must be well below delta. :func:`stability_mechanism` splits delta as
gamma <= delta/2 for the uniform mixture, the remaining >= delta/2 for the
truncated-geometric tail; tau is then computed exactly from M's full CDF.
Accuracy (Thm 5.5(ii)-(iii)): per-query (a_M(beta), beta) on counts > tau + a;
simultaneous (a_M(beta/n) + tau, beta) (a union bound over the <= n nonzero bins).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpspark.noise import CountingMechanism, FastSample, choose_exp_eps
from dpspark.exact import parse_rational
from dpspark.mechanisms.histogram.basic import noisy_counts
from dpspark.mechanisms.histogram.inputs import CountsLike, check_beta, check_counts, check_mechanism, check_universe, is_power_of_two
from dpspark.mechanisms.histogram.result import HistogramRelease, add_remove_statement, biased_draw_factor, histogram_accuracy
from dpspark.rng import RandomSource


def check_delta(delta: Any) -> Fraction:
    """delta as an exact rational in (0, 1)."""
    value = parse_rational(delta, "delta")
    if not 0 < value < 1:
        raise ValueError("delta must lie in (0, 1)")
    return value


def stability_threshold(mechanism: CountingMechanism, delta: Any, count: int = 1) -> int:
    """tau = min{b in [0, n] : F_{M,count}(b) >= ceil(d (1 - delta))}, exact integers (public inputs only).

    ``count`` is the largest count a key can reach from 0 in one unit step: 1, or c = max_rows_per_key.
    """
    dl = check_delta(delta)
    d = mechanism.d
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= mechanism.n:
        raise ValueError("count (the per-key contribution bound) must be an int in [1, n]")
    need = d - (d * dl.numerator) // dl.denominator  # ceil(d (1 - delta)) = d - floor(d delta)
    lo, hi = 0, mechanism.n  # F(n) = d >= need
    while lo < hi:
        mid = (lo + hi) // 2
        if mechanism.scaled_cdf(count, mid) >= need:
            hi = mid
        else:
            lo = mid + 1
    return lo


def stability_mechanism(n: int, epsilon: Any, delta: Any, *, rule: str = "pq") -> FastSample:
    """FastSample for StabilityHistogram under add/remove: e^{eps~} <= e^epsilon, gamma = 1/g <= delta/2."""
    eps = parse_rational(epsilon, "epsilon")
    dl = check_delta(delta)
    g = 2 * -(-dl.denominator // dl.numerator)  # 2 * ceil(1/delta) >= 2/delta
    return FastSample(n=n, exp_eps=choose_exp_eps(2 * eps, rule), gamma=Fraction(1, g))


def stability_histogram(
    counts: CountsLike,
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    delta: Any,
    rng: RandomSource,
    *,
    beta: Any = "1/20",
    rows_per_key: int = 1,
) -> HistogramRelease:
    """Release (x, M(c_x, U_x)) for the nonzero bins x whose noisy count exceeds tau, ascending by index.

    ``rows_per_key`` = c: one unit moves one key's count by up to c (tau and delta at count c; the
    statement is then (c eps~, delta_c) for one such key, see the module docstring).
    """
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=False)
    b = check_beta(beta)
    dl = check_delta(delta)
    c = rows_per_key
    tau = stability_threshold(mechanism, dl, c)
    if tau >= n:
        raise ValueError("delta is too small for this mechanism: the threshold reaches n and nothing could be released")
    keys, values = check_counts(counts, size, n)
    ys = noisy_counts(keys, dict(zip(keys, values)), mechanism, rng)
    kept = [(x, y) for x, y in zip(keys, ys) if y > tau]
    delta_m = Fraction(mechanism.d - mechanism.scaled_cdf(c, tau), mechanism.d)
    extra, grow = biased_draw_factor(0 if is_power_of_two(mechanism.d) else 1, rng.lam)
    if c == 1:
        privacy = add_remove_statement(
            mechanism.n,
            exp_eps=mechanism.exp_eps,
            bias_epsilon=extra,
            delta=delta_m * grow,
            theorem="BV Thm 5.5(i) under add/remove: (eps~, Pr[M(1,U) > tau])-DP",
            notes=f"tau = {tau}; delta = Pr[M(1,U) > tau] (exact) <= requested {dl}, times the rng bias factor; "
            "replacement: (2 eps, delta), the two changed bins being independent (dpspark.histogram.stability)",
            replacement_delta=delta_m * grow,
        )
    else:
        privacy = add_remove_statement(
            mechanism.n,
            exp_eps=mechanism.exp_eps ** c,
            bias_epsilon=extra,
            delta=delta_m * grow,
            theorem=f"BV Thm 5.5(i) under add/remove, one count moving by up to c = {c}: "
            f"(c eps~, Pr[M(c,U) > tau])-DP (dpspark.mechanisms.histogram.stability)",
            notes=f"tau = {tau}, set at count c = {c}; delta = Pr[M({c},U) > tau] (exact) <= requested {dl}, "
            "times the rng bias factor; replacement: the generic two-step rule",
        )
    a = mechanism.accuracy(b)
    a_sim = mechanism.accuracy(b / n) if n > 1 else a
    accuracy = histogram_accuracy(
        a_per_query=a,
        beta_per_query=b,
        per_query_above=tau + a,
        a_simultaneous=a_sim + tau,
        beta_simultaneous=b,
        notes="per-query only on counts > tau + a; simultaneous by a union bound over <= n nonzero bins",
    )
    return HistogramRelease(
        algorithm="StabilityHistogram",
        indices=tuple(x for x, _ in kept),
        counts=tuple(y for _, y in kept),
        universe_size=size,
        n=n,
        privacy=privacy,
        accuracy=accuracy,
        parameters={"mechanism": mechanism.describe(), "tau": tau, "delta_requested": str(dl), "beta": str(b),
                    **({"tau_at_count": c} if c > 1 else {})},
    )
