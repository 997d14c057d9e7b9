"""Plain-words statements of a release's privacy and accuracy (for ``.privacy``, ``inspect`` and ``lookup``)."""

from __future__ import annotations

from fractions import Fraction

from dpspark.release.exactjson import frac_log2
from dpspark.text import readable, short
from dpspark.privacy import AccuracyStatement, PrivacyStatement
from dpspark.release.counts_form import Manifest

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
