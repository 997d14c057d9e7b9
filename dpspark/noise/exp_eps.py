"""Choosing the rational e^{eps~} = p/q that a counting mechanism runs at.

Two rules (docs/balcer-vadhan-notes.md §G and §E3):

* ``"pq"`` (default): q = 2^(k+3) with k = max(0, ceil(log2(2/eps))), and
  p = floor(q * L) with L a certified rational lower bound of e^{eps/2}. Then
  eps~ = ln(p/q) <= eps/2 and eps~ ~= eps/2 (0.0495 at eps = 1/10). Valid for any
  eps > 0; q*(e^{eps/2} - 1) >= 8 guarantees p >= q + 8.
* ``"pow2"``: the paper's x = 2^k, y = 2^k + 1 with k = ceil(log2(2/eps)), so
  eps~ = ln(1 + 2^-k) in (ln(1+eps/4), eps/2]; only for eps <= 1.

Both follow the paper's convention that a mechanism "at eps" is eps/2-DP per
count (so a histogram is eps-DP under replacement). A release under
add/remove neighbours instead asks for e^{eps~} close to e^{eps} through
:func:`exp_eps_at_most`.
"""

from __future__ import annotations

from fractions import Fraction

from dpspark.errors import ParameterError, ParameterTypeError
from dpspark.exact import RationalLike, clog2, exp_lower_bound, parse_rational

RULES = ("pq", "pow2")


def exp_eps_at_most(target: Fraction, q: int) -> Fraction:
    """The largest p/q (fixed q) with p/q <= e^{target}, certified; requires p > q."""
    if target <= 0:
        raise ParameterError("epsilon must be > 0")
    p = (q * exp_lower_bound(target)).__floor__()
    if p <= q:
        raise ParameterError(f"epsilon {target} is too small for denominator {q}: e^epsilon rounds to 1")
    return Fraction(p, q)


def denominator_for(epsilon: Fraction) -> int:
    """q = 2^(k+3), k = max(0, ceil(log2(2/eps))): enough resolution that p >= q + 8."""
    two_over = 2 / epsilon
    k = clog2(-((-two_over.numerator) // two_over.denominator))  # ceil(log2(ceil(2/eps)))
    return 1 << (max(k, 0) + 3)


def choose_exp_eps(epsilon: Fraction, rule: str = "pq") -> Fraction:
    """Return e^{eps~} = p/q for a mechanism 'at epsilon' (eps~ <= eps/2) under ``rule``."""
    if epsilon <= 0:
        raise ParameterError(f"epsilon must be > 0, got {epsilon}")
    if rule == "pq":
        return exp_eps_at_most(epsilon / 2, denominator_for(epsilon))
    if rule == "pow2":
        if epsilon > 1:
            raise ParameterError(
                f"the 'pow2' rule needs epsilon <= 1 (got {epsilon}); use rule='pq' (see docs/balcer-vadhan-notes.md §E3)"
            )
        e_ceil = -((-epsilon.denominator) // epsilon.numerator)  # ceil(1/eps)
        k = 1 + clog2(e_ceil)
        x = 1 << k
        return Fraction(x + 1, x)
    raise ParameterError(f"rule must be one of {RULES}, got {rule!r}")


def check_exp_eps(value: Fraction) -> Fraction:
    """Validate a user-given e^{eps~} = p/q: rational with p > q >= 1."""
    if not isinstance(value, Fraction):
        raise ParameterTypeError("exp_eps must be a fractions.Fraction p/q")
    if value <= 1:
        raise ParameterError(f"exp_eps = p/q must be > 1 (eps~ > 0), got {value}")
    return value


def resolve_exp_eps(
    epsilon: RationalLike | None, exp_eps: Fraction | None, rule: str
) -> tuple[Fraction | None, Fraction, str]:
    """(epsilon, exp_eps, rule) from a constructor's exactly-one-of ``epsilon`` / ``exp_eps`` arguments."""
    if (epsilon is None) == (exp_eps is None):
        raise ParameterError("give exactly one of epsilon (paper convention, eps~ <= eps/2) or exp_eps = p/q")
    if exp_eps is not None:
        return None, check_exp_eps(exp_eps), "exp_eps"
    eps = parse_rational(epsilon, "epsilon")
    if eps <= 0:
        raise ParameterError(f"epsilon must be > 0, got {eps}")
    return eps, choose_exp_eps(eps, rule), rule
