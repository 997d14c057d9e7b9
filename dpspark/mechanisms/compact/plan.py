"""The public plan of a compact release from a config's numbers: split of epsilon, M, m, G, l.

Everything here depends on public inputs only (n, |X|, epsilon, beta, gamma,
m, sampler kind) and runs before Spark starts, so an impossible request (|X|
above 2^m, no supported m fits) is a config error, never a failed job.

Budget split under add/remove (docs/balcer-vadhan-notes.md §C4, reference convention
eps_c = 0.9 eps, eps2 = 0.1 eps): the counting mechanism gets
e^{eps~} = p/q <= e^{9 eps/10} and the empty-bin sampler's certified bound
max_v |ln(g(v)/m_0(v))| must be <= eps/10. The plan then certifies
ln(p/q) + sampler_epsilon + rng_bias <= eps exactly (rational bounds only).

With ``rows_per_key = c`` > 1 (one unit moves one key's count by up to c, never a new key's factor more
than once: see :mod:`dpspark.mechanisms.compact.privacy`) the sampler keeps its eps/10 and the counting
mechanism's share is divided by c: (p/q)^c <= e^{9 eps/10}, and the plan certifies
c ln(p/q) + sampler_epsilon + rng_bias <= eps. ``n`` is then the count range (k c units) while the
polynomial has l = n/c + 1 coefficients (at most n/c keys are non-zero). With c = 1 nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpspark.mechanisms.compact.parameters import SUPPORTED_M, choose_field_degree, make_sampler, simultaneous_gamma
from dpspark.mechanisms.compact.privacy import compact_privacy
from dpspark.mechanisms.compact.empty_bin import SAMPLERS, EmptyBinSampler
from dpspark.noise import CountingMechanism, FastSample
from dpspark.noise.exp_eps import denominator_for, exp_eps_at_most
from dpspark.errors import DPSparkError
from dpspark.exact import exp_lower_bound
from dpspark.rng import DEFAULT_LAMBDA

#: Share of epsilon given to the empty-bin sampler (the rest goes to the counting mechanism).
SAMPLER_SHARE = Fraction(1, 10)


class CompactPlanError(DPSparkError, ValueError):
    """The public parameters admit no compact release (the message names only public parameters)."""


@dataclass(frozen=True)
class CompactPlan:
    """M, m, G and the budget split of a compact release."""

    n: int
    universe_size: int
    epsilon: Fraction
    epsilon_count: Fraction
    epsilon2: Fraction
    beta: Fraction
    mechanism: CountingMechanism
    m: int
    sampler: EmptyBinSampler
    #: c: the counting range n is c times the bound on the number of non-zero keys
    rows_per_key: int = 1

    @property
    def ell(self) -> int:
        """Number of coefficients: n/c + 1, one more than the most non-zero keys (never data-dependent)."""
        return self.n // self.rows_per_key + 1

    def describe(self) -> dict[str, Any]:
        """Public plan for ``--dry-run`` and progress lines."""
        return {
            "ell": self.ell,
            "m": self.m,
            "sampler": self.sampler.kind,
            "epsilon_count": str(self.epsilon_count),
            **({"rows_per_key": self.rows_per_key} if self.rows_per_key > 1 else {}),
            "epsilon2": str(self.epsilon2),
            "coefficient_file_bytes": self.ell * self.m // 8,
        }


def round_gamma(gamma: Fraction) -> Fraction:
    """gamma rounded down to the form 1/g with g an integer >= 2 (docs/balcer-vadhan-notes.md §E1)."""
    if not 0 < gamma < 1:
        raise CompactPlanError("gamma must lie in (0, 1)")
    return Fraction(1, max(2, -(-gamma.denominator // gamma.numerator)))


def plan_compact(
    n: int,
    universe_size: int,
    epsilon: Fraction,
    beta: Fraction,
    *,
    gamma: Fraction | None = None,
    m: int | None = None,
    sampler: str = "rounded-cdf",
    lam: int = DEFAULT_LAMBDA,
    rows_per_key: int = 1,
) -> CompactPlan:
    """The compact release's public plan; raises :class:`CompactPlanError` when none exists.

    ``n`` is the count range; with ``rows_per_key = c`` it must be a multiple of c (k c units), each key's
    count may move by up to c per unit, and ``epsilon`` is the budget of one key (module docstring).
    """
    c = rows_per_key
    if isinstance(c, bool) or not isinstance(c, int) or c < 1 or n % c:
        raise CompactPlanError("rows_per_key must be a positive int dividing the count range n")
    if sampler not in SAMPLERS:
        raise CompactPlanError(f"sampler must be one of {sorted(SAMPLERS)}, got {sampler!r}")
    if m is not None and m not in SUPPORTED_M:
        raise CompactPlanError(f"m must be one of {SUPPORTED_M} (the supported GF(2^m)), got {m!r}")
    top = SUPPORTED_M[-1] if m is None else m
    if universe_size > 1 << top:
        raise CompactPlanError(
            f"the universe has more than 2^{top} keys (|X| has {universe_size.bit_length()} bits): "
            f"phi maps keys into GF(2^m) injectively only when |X| <= 2^m"
        )
    eps2 = epsilon * SAMPLER_SHARE
    eps_count = epsilon - eps2
    eps_row = eps_count / c  # (p/q)^c <= e^eps_count: a key's count moves by up to c
    try:
        exp_eps = exp_eps_at_most(eps_row, denominator_for(eps_row))
    except ValueError as exc:
        raise CompactPlanError(str(exc)) from None
    g = round_gamma(gamma) if gamma is not None else simultaneous_gamma(universe_size, beta)
    mech = FastSample(n=n, gamma=g, exp_eps=exp_eps)
    try:
        degree = choose_field_degree(universe_size, mech, eps2, sampler, SUPPORTED_M if m is None else (m,))
    except ValueError as exc:
        raise CompactPlanError(str(exc)) from None
    g_sampler = make_sampler(mech, degree, sampler)
    detail = compact_privacy(mech, g_sampler, lam)
    extra = detail.sampler_epsilon + detail.rng_bias
    if not exp_eps**c <= exp_lower_bound(epsilon) * (1 - extra):  # certified: c ln(p/q) + extra <= epsilon
        raise CompactPlanError("internal error: the compact release's exact epsilon would exceed the configured one")
    return CompactPlan(n, universe_size, epsilon, eps_count, eps2, beta, mech, degree, g_sampler, c)
