"""Plain-words statements of a release's privacy and accuracy (for ``.privacy``, ``inspect`` and ``lookup``)."""

from __future__ import annotations

from fractions import Fraction

from dpspark.release.exactjson import frac_float, frac_log2, frac_to_str
from dpspark.release.manifest import AccuracyInfo, Manifest, RelationPrivacy

_SHORT = 40


def short(value: Fraction, exact: bool = False) -> str:
    """An exact rational when short (or ``exact``), else its approximate power of two (display only)."""
    text = frac_to_str(value)
    if exact or len(text) <= _SHORT:
        return text
    if value.denominator.bit_length() <= 1024:
        return f"~{float(value):.6g}"  # report
    log2 = frac_log2(value)
    return f"~2^{log2:.2f}" if log2 is not None else text[:_SHORT] + "..."  # report


def _eps(rel: RelationPrivacy, exact: bool = False) -> str:
    shown = "" if rel.epsilon_float is None else f" ~ {rel.epsilon_float:.6g}"  # report
    bias = "" if rel.bias_epsilon == 0 else f" + {short(rel.bias_epsilon, exact)}"
    return f"eps = ln({short(rel.exp_epsilon_tilde, exact)}){bias}{shown}"


def _delta(rel: RelationPrivacy, exact: bool = False) -> str:
    if rel.delta == 0:
        return "delta = 0 (pure DP)"
    log2 = frac_log2(rel.delta)
    return f"delta = {short(rel.delta, exact)} (~2^{log2:.2f}, ~{frac_float(rel.delta):.3g})"  # report


def relation_line(rel: RelationPrivacy, exact: bool = False) -> str:
    """One relation's (eps, delta) in words; ``exact`` prints every rational in full."""
    return f"{_eps(rel, exact)}, {_delta(rel, exact)}  [{rel.relation}]"


def privacy_text(m: Manifest) -> str:
    """The release's privacy guarantee in plain words."""
    lines = [
        f"This release is ({_eps(m.add_remove)}, {_delta(m.add_remove)})-differentially private when one unit "
        f"is added or removed, among datasets of at most n = {m.max_units} units (n is public and declared).",
        f"Replacing one unit (two add/remove steps, by group privacy): {_eps(m.replacement)}, {_delta(m.replacement)}.",
        f"Theorem: {m.theorem}. Mechanism: {m.algorithm} with {m.counting} counts, e^eps~ = {short(m.exp_epsilon_tilde)}.",
        f"Randomness: {m.rng_name}.",
    ]
    if m.rng_test_only:
        lines.append("WARNING: the noise was drawn with a deterministic TEST-ONLY generator; this release is NOT private.")
    return "\n".join(lines)


def condition_text(acc: AccuracyInfo) -> str:
    """When the per-query error bar holds, in words."""
    if acc.per_query_above < 0:
        return f"holds for every key with probability >= 1 - {short(acc.beta_per_query)}"
    return (
        f"holds with probability >= 1 - {short(acc.beta_per_query)} only if the true count is > "
        f"{acc.per_query_above}; smaller counts may be reported as 0"
    )


def accuracy_text(m: Manifest) -> str:
    """The release's accuracy statement in plain words."""
    acc = m.accuracy
    lines = [
        f"Per key: |noisy - true| <= {acc.a_per_query}; {condition_text(acc)}.",
        f"All keys at once: |noisy - true| <= {acc.a_simultaneous} with probability >= 1 - "
        f"{short(acc.beta_simultaneous)}.",
    ]
    if acc.per_query_above >= 0:
        lines.append(f"Threshold: bins whose true count is <= {acc.per_query_above} may be absent (read as 0).")
    if acc.notes:
        lines.append(f"Notes: {acc.notes}")
    return "\n".join(lines)
