"""CompactHistogram_{M,G} (Balcer-Vadhan Algorithm 8.2, Theorem 8.3; docs/balcer-vadhan-notes.md §C1-§C3).

1. S = supp(D); noisy counts v_x = M(c_x, U_x) for x in S (BasicHistogram on S).
2. p uniform of degree <= n with G(iota(p(phi(x)))) = v_x for x in S:
   u_x uniform on G^{-1}(v_x), then p = L_S + Z_S R (:mod:`dpspark.mechanisms.compact.construct`).
3. Release p's l = n + 1 coefficients (l never depends on |S|), m, the modulus
   and the parameters of M and G. (With a per-key contribution bound c, M runs on [0, n] with n = k c
   units while l = n/c + 1: only |S| < l matters, see ``ell`` below.)

Privacy (derived identity Pr_D[p] = d0^{-l} prod_{s in S} m_{c_s}(v_s)/g(v_s),
see :mod:`dpspark.mechanisms.compact.privacy`): under add/remove of one unit (at most n
units per dataset), pure (eps~ + sampler_epsilon + bias)-DP with
e^{eps~} = M.exp_eps, sampler_epsilon a certified rational bound on
max_v |ln(g(v)/m_0(v))| (<= epsilon2 by the choice of m), and bias =
bias_epsilon(<= 2) for the changed bin's mod-N draws (docs/balcer-vadhan-notes.md §E12).
Replacement: 2 eps~ + eps_a + eps_b + 2 bias.
Accuracy: per-query (a_M(beta), beta) on every bin; simultaneous
(a_M(beta/|X|), beta) by a union bound (needs gamma < beta/|X|, see
:func:`dpspark.mechanisms.compact.parameters.compact_mechanism`).
Time: |S| noisy counts (ceil(log2(n+1)) CDF steps each), one subproduct tree
on |S| points and one product of sizes |S|+1 and l-|S|. The loop over S differs
by one between neighbours (docs/balcer-vadhan-notes.md §E10); construction time depends on |S|.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dpspark.mechanisms.compact.construct import conditioned_polynomial, draw_targets, points_of_indexes
from dpspark.mechanisms.compact.parameters import choose_field_degree, make_sampler, SUPPORTED_M
from dpspark.mechanisms.compact.privacy import compact_accuracy, compact_privacy
from dpspark.mechanisms.compact.rebuild import CompactRelease, mechanism_parameters
from dpspark.noise import CountingMechanism
from dpspark.exact import RationalLike, parse_rational
from dpspark.gf import GF2m, modulus_int
from dpspark.mechanisms.histogram.basic import noisy_counts
from dpspark.mechanisms.histogram.inputs import CountsLike, check_beta, check_counts, check_mechanism, check_universe
from dpspark.rng import RandomSource


def compact_histogram(
    counts: CountsLike,
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    rng: RandomSource,
    *,
    epsilon2: RationalLike,
    beta: Any = "1/20",
    m: int | None = None,
    sampler: str = "rounded-cdf",
    progress: Callable[[str], None] | None = None,
    ell: int | None = None,
) -> CompactRelease:
    """Release a CompactHistogram of ``counts`` (0-based indexes in [0, |X|), total <= n).

    ``mechanism`` must be on [0, n] (e.g. :func:`~dpspark.mechanisms.compact.parameters.compact_mechanism`).
    ``m`` defaults to the smallest supported degree with 2^m >= |X| whose sampler
    bound is <= ``epsilon2``; an explicit ``m`` must satisfy the same conditions.
    ``ell`` (default n + 1) is the number of coefficients, a public bound on the non-zero keys plus one:
    with a per-key contribution bound c the counts total <= n = k c units while at most n/c keys are
    non-zero, so l = n/c + 1 (the product formula needs |S| < l for every dataset of the domain).
    ``progress`` receives stage names only (never |S| or a count).
    """
    show = progress or (lambda _msg: None)
    check_mechanism(mechanism, n)
    size = check_universe(universe_size, n, sparse=False)
    b = check_beta(beta)
    e2 = parse_rational(epsilon2, "epsilon2")
    keys, values = check_counts(counts, size, n)
    candidates = SUPPORTED_M if m is None else (m,)
    degree = choose_field_degree(size, mechanism, e2, sampler, candidates)
    g = make_sampler(mechanism, degree, sampler)
    field = GF2m(degree)
    if ell is None:
        ell = n + 1
    if isinstance(ell, bool) or not isinstance(ell, int) or not 2 <= ell <= n + 1:
        raise ValueError("ell (the number of coefficients) must be an int in [2, n + 1]")
    if len(keys) >= ell:  # the engine's contribution bounds make this impossible; a fixed, value-free message
        raise ValueError("the counts have at least l non-zero keys: l - 1 must bound them for every dataset")

    show("compact: drawing the noisy counts of the nonzero bins")
    noisy = noisy_counts(keys, dict(zip(keys, values)), mechanism, rng)
    targets = draw_targets(g, noisy, rng)
    points = points_of_indexes(field, keys)
    vals = field.from_int([u - 1 for u in targets]).reshape(len(targets), field.w)
    show(f"compact: building the polynomial over GF(2^{degree}) (l = " + ("n + 1 = " if ell == n + 1 else "")
         + f"{ell} coefficients)")
    coeffs = conditioned_polynomial(field, ell, points, vals, rng)
    show("compact: polynomial built")

    detail = compact_privacy(mechanism, g, rng.lam)
    params = {
        "m": degree,
        "modulus": hex(modulus_int(degree)),
        "ell": ell,
        "n": n,
        "universe_size": size,
        "mechanism": mechanism_parameters(mechanism),
        "sampler": g.describe(),
        "epsilon2": str(e2),
        "beta": str(b),
        "point_map": "phi(index) = field element whose integer is the 0-based index",
        "value_map": "iota(e) = integer of e + 1, in [1, 2^m]",
    }
    return CompactRelease(
        coefficients=coeffs,
        m=degree,
        modulus=modulus_int(degree),
        ell=ell,
        n=n,
        universe_size=size,
        mechanism=mechanism,
        sampler=g,
        privacy=detail.add_remove(n),
        privacy_detail=detail,
        accuracy=compact_accuracy(mechanism, size, b),
        parameters=params,
    )


def lookup_many(release: CompactRelease, indexes: Iterable[int]) -> list[int]:
    """Convenience wrapper: ``release.lookup(list(indexes))``."""
    return release.lookup(list(indexes))
