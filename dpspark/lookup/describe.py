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
    if not exact:
        from dpspark.text.statements import delta_words

        return delta_words(rel.delta)  # scientific, rounded up: 9.03e-10
    log2 = frac_log2(rel.delta)
    shown = short(rel.delta, exact)
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


def counted_line(m: Manifest) -> str:
    """What the release's counts count (after contribution bounding), in words."""
    from dpspark.text.counted import counted_words

    return counted_words(m.raw.get("config") or {})


def condition_text(acc: AccuracyStatement, exact: bool = False) -> str:
    """When the per-query error bar holds, in words."""
    if acc.per_query_above < 0:
        return f"holds for every key with probability >= {_confidence(acc.beta_per_query, exact)}"
    return (
        f"holds with probability >= {_confidence(acc.beta_per_query, exact)} only if the exact count is > "
        f"{acc.per_query_above}; smaller counts may be reported as 0"
    )


def _confidence(beta: Fraction, exact: bool) -> str:
    """1 - beta: exact with ``exact``, else a decimal rounded down (0.95)."""
    from dpspark.text import confidence

    return f"1 - {short(beta, True)}" if exact else confidence(beta)


def accuracy_text(m: Manifest, exact: bool = False) -> str:
    """The release's accuracy statement in plain words (``exact``: every rational in full).

    "exact count" is the count of what the release counted (:func:`counted_line`): after contribution bounding,
    not the rows of the data.
    """
    acc = m.accuracy
    lines = [
        f"Counted: {counted_line(m)} (after contribution bounding, not rows of the data).",
        f"Per key: |noisy - exact count| <= {acc.a_per_query}; {condition_text(acc, exact)}.",
        f"All keys at once: |noisy - exact count| <= {acc.a_simultaneous} with probability >= "
        f"{_confidence(acc.beta_simultaneous, exact)}.",
    ]
    if acc.per_query_above >= 0:
        lines.append(
            f"Threshold: bins whose exact count is <= {acc.per_query_above} may be absent (read as 0), and a "
            f"released count <= {acc.per_query_above} may be noise (marked 'below threshold: may be noise')."
        )
    if acc.notes:
        lines.append(f"Notes: {acc.notes}")
    return "\n".join(lines)
