"""Privacy and accuracy statements in words a reader can take in (``inspect``, ``.privacy``, ``--dry-run``).

The statements' own ``text()`` (:mod:`dpspark.privacy`) is exact and goes into the manifest; it can hold
rationals of hundreds of digits. Here every number is short: epsilon as its exact ``ln(p/q) + f`` form when
that is short, else a decimal rounded up; delta in scientific form (rounded up); rho as a short fraction or a
decimal rounded up; a confidence 1 - beta as a decimal rounded down (:func:`dpspark.text.confidence`). A
printed number is therefore still a true statement, and none has more than :data:`dpspark.text.MAX_DIGITS`
digits. ``exact=True`` gives the exact texts instead (``inspect --exact``). Display only: nothing here decides.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from dpspark.text import bound_text, confidence, readable, readable_text, rounded

__all__ = ["accuracy_words", "claim_words", "delta_words", "epsilon_words", "measure_words", "rho_words",
           "statement_words"]


def _exactly_short(x: Fraction) -> str | None:
    """``x`` exactly and short: a decimal of at most 6 significant digits (``1.5``, ``1e-9``), else
    ``readable(x)`` when that is exact (``3/7``, ``2^-126``), else None."""
    text, exact = rounded(x, 6)
    if exact:
        return text
    text = readable(x)
    return None if "…" in text else text


def epsilon_words(eps: Any) -> str:
    """An epsilon (a :class:`~dpspark.privacy.epsilon.LogEpsilon`): ``eps = ln(21/8) + 2^-126 (~0.965081)``
    when the exact form is short, else ``eps <= 0.966`` (a certified upper bound, rounded up)."""
    if eps.is_rational:
        v = eps.as_fraction()
        text = _exactly_short(v)
        if text is not None and len(text) <= 12:
            return f"eps = {text}"
        return f"eps {bound_text(v, 4)}"
    r, f = readable(eps.exp), _exactly_short(abs(eps.extra))
    r = None if "…" in r else r
    approx = f"{eps.float_approx():.6g}"  # report
    if r is not None and f is not None and len(r) <= 24:
        extra = "" if eps.extra == 0 else f" {'+' if eps.extra > 0 else '-'} {f}"
        return f"eps = ln({r}){extra} (~{approx})"
    return f"eps <= {rounded(eps.upper(64), 4, up=True)[0]}"


def delta_words(delta: Fraction) -> str:
    """``delta = 0 (pure DP)``, ``delta = 1e-9`` or ``delta <= 9.25e-7`` (rounded up)."""
    if delta == 0:
        return "delta = 0 (pure DP)"
    return f"delta {bound_text(delta)}"


def rho_words(rho: Fraction) -> str:
    """``rho = 125/5202 (~0.0240292)`` when the fraction is short, else ``rho <= 0.206`` (rounded up)."""
    text = _exactly_short(rho)
    if text is not None and len(text) <= 12:
        decimal = rounded(rho, 6)[1] or "/" not in text
        return f"rho = {text}" + ("" if decimal else f" (~{float(rho):.6g})")  # report
    return f"rho <= {rounded(rho, 4, up=True)[0]}"


def measure_words(measure: Any) -> str:
    """A :mod:`dpspark.privacy` measure in short words."""
    from dpspark.privacy.measures import ApproxDP, PureDP, ZCDP

    if isinstance(measure, ZCDP):
        return f"{rho_words(measure.rho)}, zCDP"
    if isinstance(measure, PureDP) or (isinstance(measure, ApproxDP) and measure.delta == 0):
        return f"{epsilon_words(measure.epsilon)}, pure DP"
    return f"{epsilon_words(measure.epsilon)}, {delta_words(measure.delta)}"


def statement_words(statement: Any, exact: bool = False) -> str:
    """A :class:`~dpspark.privacy.PrivacyStatement` in words (``exact``: its own exact text)."""
    if exact:
        return statement.text()
    return (f"{measure_words(statement.measure)} under [{statement.relation.text()}]. "
            f"Theorem: {readable_text(statement.theorem)}.")


#: what a claim bounds, in words
_QUANTITY = {"abs_error": "|noisy - true|", "tv_distance": "d_TV(output law, target)",
             "abs_error_over_sensitivity": "|noisy - true| / the answer's sensitivity",
             "whitened_frobenius_error": "||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F",
             "mahalanobis_error": "||Sigma^-1/2 (mu^ - mu)||_2"}
_SCOPE = {"per_query": "for each answer", "simultaneous": "for all answers at once", "output": "for the output"}


def claim_words(claim: Any, exact: bool = False, bound: Callable[[Fraction], str] | None = None) -> str:
    """An :class:`~dpspark.privacy.AccuracyClaim` in words: the bound rounded up, the confidence as a decimal.

    ``bound``: how to write the bound (a reader that knows the claim's units passes its own); default
    ``<= 13.3`` style. ``exact``: the claim's own exact text.
    """
    if exact:
        return claim.text()
    what = _QUANTITY.get(claim.quantity, claim.quantity)
    where = _SCOPE.get(claim.scope, claim.scope)
    prob = "always (probability 1)" if claim.beta == 0 else f"with probability >= {confidence(claim.beta)}"
    shown = bound(claim.bound) if bound is not None else _at_most(claim.bound)
    parts = [f"{where}: {what} {shown}, {prob}"]
    if claim.count_above is not None:
        parts.append(f"only where the exact value is > {claim.count_above}")
    if claim.min_units is not None:
        parts.append(f"needs at least {claim.min_units} units")
    if claim.condition:
        parts.append(readable_text(claim.condition))
    return "; ".join(parts)


def _at_most(x: Fraction) -> str:
    """``<= x`` (exact when short, else rounded up)."""
    text = bound_text(x)
    return "<= " + text[2:] if text.startswith("= ") else text


def accuracy_words(accuracy: Any, exact: bool = False) -> str:
    """An :class:`~dpspark.privacy.AccuracyStatement` in words, one claim per line, then its notes."""
    if exact:
        return accuracy.text()
    lines = [claim_words(c) for c in accuracy.claims]
    if accuracy.notes:
        lines.append(f"Notes: {readable_text(accuracy.notes)}")
    return "\n".join(lines)
