"""Public parameters of CompactHistogram: the counting mechanism, the field size m, the sampler.

Everything here depends only on public inputs (n, |X|, epsilons, beta), never
on the data.
"""

from __future__ import annotations

from fractions import Fraction

from dpspark.mechanisms.compact.empty_bin import SAMPLERS, EmptyBinSampler
from dpspark.noise import CountingMechanism, FastSample
from dpspark.noise.exp_eps import denominator_for, exp_eps_at_most
from dpspark.exact import RationalLike, parse_rational

#: Field degrees with an implemented GF(2^m) (dpspark.gf); m = 63 or any other degree is never used.
SUPPORTED_M: tuple[int, ...] = (64, 128, 192, 256)


def simultaneous_gamma(universe_size: int, beta: RationalLike) -> Fraction:
    """gamma = 2^-k, the largest power-of-two 1/g with gamma <= beta / (2|X|).

    Then beta/|X| - gamma >= beta/(2|X|) > 0, which the simultaneous accuracy
    a_M(beta/|X|) needs (BV Thm 8.6(iii); docs/balcer-vadhan-notes.md §C4).
    """
    b = parse_rational(beta, "beta")
    if not 0 < b < 1:
        raise ValueError("beta must lie in (0, 1)")
    if isinstance(universe_size, bool) or not isinstance(universe_size, int) or universe_size < 1:
        raise ValueError("universe_size must be an int >= 1")
    target = b / (2 * universe_size)
    k = 1
    while Fraction(1, 1 << k) > target:  # public inputs only; k <= log2(2|X|/beta) + 1
        k += 1
    return Fraction(1, 1 << k)


def compact_mechanism(n: int, universe_size: int, epsilon_count: RationalLike, beta: RationalLike = "1/20") -> FastSample:
    """FastSample for the nonzero bins under add/remove: e^{eps~} = p/q <= e^{epsilon_count}, gamma per beta/|X|.

    p/q is the largest certified rational below e^{epsilon_count} with the
    denominator of :func:`dpspark.noise.exp_eps.denominator_for` (a power of
    two); gamma = :func:`simultaneous_gamma`. For small n FastSample falls back
    to GeoSample (check ``.fallback``); the field-size rule below handles both.
    """
    eps = parse_rational(epsilon_count, "epsilon_count")
    if eps <= 0:
        raise ValueError("epsilon_count must be > 0")
    exp_eps = exp_eps_at_most(eps, denominator_for(eps))
    return FastSample(n=n, gamma=simultaneous_gamma(universe_size, beta), exp_eps=exp_eps)


def make_sampler(mechanism: CountingMechanism, m: int, kind: str = "rounded-cdf") -> EmptyBinSampler:
    """The empty-bin sampler of ``kind`` ("rounded-cdf" or "block") over [1, 2^m]."""
    if kind not in SAMPLERS:
        raise ValueError(f"sampler kind must be one of {sorted(SAMPLERS)}, got {kind!r}")
    return SAMPLERS[kind](mechanism, m)


def sampler_fits(sampler: EmptyBinSampler, epsilon2: Fraction) -> bool:
    """True iff the sampler is well defined and its certified max|ln(g/m_0)| is <= epsilon2."""
    if sampler.d0 < sampler.d and sampler.kind == "block":
        return False
    if hasattr(sampler, "valid") and not sampler.valid():
        return False
    return sampler.sampler_epsilon() <= epsilon2


def choose_field_degree(
    universe_size: int,
    mechanism: CountingMechanism,
    epsilon2: RationalLike,
    kind: str = "rounded-cdf",
    candidates: tuple[int, ...] = SUPPORTED_M,
) -> int:
    """Smallest m in ``candidates`` with 2^m >= |X| and sampler_epsilon(m) <= epsilon2.

    The sampler bound uses the EXACT minimum of m_0(v) over v (docs/balcer-vadhan-notes.md §E8;
    the GeoSample fallback has no gamma/(n+1) floor). Raises ValueError if no
    supported m fits; the message names only public parameters.
    """
    e2 = parse_rational(epsilon2, "epsilon2")
    if e2 <= 0:
        raise ValueError("epsilon2 (the empty-bin sampler's budget) must be > 0")
    if isinstance(universe_size, bool) or not isinstance(universe_size, int) or universe_size < 1:
        raise ValueError("universe_size must be an int >= 1")
    for m in candidates:
        if m not in SUPPORTED_M:
            raise ValueError(f"unsupported field degree {m}; supported: {SUPPORTED_M}")
        if (1 << m) < universe_size:
            continue
        if kind == "block" and (1 << m) < mechanism.d:
            continue
        if sampler_fits(make_sampler(mechanism, m, kind), e2):
            return m
    raise ValueError(
        f"no supported field degree in {candidates} fits |X| (bit length {universe_size.bit_length()}), "
        f"d (bit length {mechanism.d.bit_length()}) and epsilon2 = {e2} with the {kind} sampler; "
        "increase epsilon2 or use a mechanism with a smaller d (FastSample, larger n)"
    )
