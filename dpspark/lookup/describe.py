"""Plain-words statements of a release's privacy and accuracy (for ``.privacy``, ``inspect`` and ``lookup``)."""

from __future__ import annotations

import math
from fractions import Fraction

from dpspark.release.exactjson import frac_log2, frac_to_str
from dpspark.privacy import AccuracyStatement, PrivacyStatement
from dpspark.release.manifest import Manifest

#: an exact rational is printed as is up to this many characters; longer ones as a decimal with "…"
_SHORT = 12
#: no printed integer is longer than this by default (``inspect --exact`` prints everything)
MAX_DIGITS = 20


def _power_of_two(x: int) -> int | None:
    return x.bit_length() - 1 if x > 0 and x & (x - 1) == 0 else None


def _decimal(a: Fraction) -> str:
    """A positive rational as a 3-significant-digit decimal followed by "…" (display only, never decides)."""
    log2 = frac_log2(a)
    assert log2 is not None
    log10 = log2 * math.log10(2)  # report
    if -4 <= log10 < 6:
        return f"{float(a):.3g}…"  # report
    exp10 = math.floor(log10)  # report
    mant = 10 ** (log10 - exp10)  # report
    if mant >= 9.995:  # report: rounding carried into the next power of ten
        mant, exp10 = 1.0, exp10 + 1  # report
    return f"{mant:.3g}e{exp10}…"  # report


def readable(value: Fraction | int) -> str:
    """A number a reader can take in: exact when short, ``2^k`` for powers of two, else ``0.0333…``.

    Never more than :data:`MAX_DIGITS` digits; exact values stay in the manifest
    and behind ``inspect --exact`` (:func:`short` with ``exact=True``).
    """
    v = Fraction(value)
    if v < 0:
        return "-" + readable(-v)
    if v == 0:
        return "0"
    if v.denominator == 1:
        k = _power_of_two(v.numerator)
        if k is not None and k >= 64:
            return f"2^{k}"
        text = str(v.numerator)
        return text if len(text) <= MAX_DIGITS else _decimal(v)
    if v.numerator == 1:
        k = _power_of_two(v.denominator)
        if k is not None and k >= 10:
            return f"2^-{k}"
    text = frac_to_str(v)
    return text if len(text) <= _SHORT else _decimal(v)


def short(value: Fraction, exact: bool = False) -> str:
    """The exact rational with ``exact``, else :func:`readable` (display only)."""
    return frac_to_str(value) if exact else readable(value)


def _eps(rel: PrivacyStatement, exact: bool = False) -> str:
    approx = rel.epsilon_float()  # report
    shown = "" if approx is None else f" ~ {approx:.6g}"  # report
    bias = "" if rel.bias_epsilon == 0 else f" + {short(rel.bias_epsilon, exact)}"
    return f"eps = ln({short(rel.exp_eps, exact)}){bias}{shown}"


def _delta(rel: PrivacyStatement, exact: bool = False) -> str:
    if rel.delta == 0:
        return "delta = 0 (pure DP)"
    log2 = frac_log2(rel.delta)
    shown = short(rel.delta, exact)
    if shown.startswith("2^"):
        return f"delta = {shown}"
    return f"delta = {shown} (~2^{log2:.2f})"  # report


def relation_line(rel: PrivacyStatement, exact: bool = False) -> str:
    """One relation's (eps, delta) in words; ``exact`` prints every rational in full."""
    return f"{_eps(rel, exact)}, {_delta(rel, exact)}  [{rel.relation.text()}]"


def privacy_text(m: Manifest, exact: bool = False) -> str:
    """The release's privacy guarantee in plain words (``exact``: every rational in full)."""
    lines = [
        f"This release is ({_eps(m.add_remove, exact)}, {_delta(m.add_remove, exact)})-differentially private when "
        f"one unit is added or removed, among datasets of at most n = {m.max_units} units (n is public and declared).",
        f"Replacing one unit (two add/remove steps, by group privacy): {_eps(m.replacement, exact)}, "
        f"{_delta(m.replacement, exact)}.",
        f"Theorem: {m.theorem}. Mechanism: {m.algorithm} with {m.counting} counts, "
        f"e^eps~ = {short(m.exp_epsilon_tilde, exact)}.",
        f"Randomness: {m.rng_name}.",
    ]
    if m.rng_test_only:
        lines.append("WARNING: the noise was drawn with a deterministic TEST-ONLY generator; this release is NOT private.")
    return "\n".join(lines)


def condition_text(acc: AccuracyStatement, exact: bool = False) -> str:
    """When the per-query error bar holds, in words."""
    if acc.per_query_above < 0:
        return f"holds for every key with probability >= 1 - {short(acc.beta_per_query, exact)}"
    return (
        f"holds with probability >= 1 - {short(acc.beta_per_query, exact)} only if the true count is > "
        f"{acc.per_query_above}; smaller counts may be reported as 0"
    )


def accuracy_text(m: Manifest, exact: bool = False) -> str:
    """The release's accuracy statement in plain words (``exact``: every rational in full)."""
    acc = m.accuracy
    lines = [
        f"Per key: |noisy - true| <= {acc.a_per_query}; {condition_text(acc, exact)}.",
        f"All keys at once: |noisy - true| <= {acc.a_simultaneous} with probability >= 1 - "
        f"{short(acc.beta_simultaneous, exact)}.",
    ]
    if acc.per_query_above >= 0:
        lines.append(
            f"Threshold: bins whose true count is <= {acc.per_query_above} may be absent (read as 0), and a "
            f"released count <= {acc.per_query_above} may be noise (marked 'below threshold: may be noise')."
        )
    if acc.notes:
        lines.append(f"Notes: {acc.notes}")
    return "\n".join(lines)
