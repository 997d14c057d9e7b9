"""What a sparse histogram will hide, said before the spend (``--dry-run``), from public parameters only.

A sparse histogram releases a key only when its noisy count passes a threshold: a key whose exact count is at or
below the accuracy statement's ``per_query_above`` may be absent (read as 0). For ``pure_sparse`` that threshold
is large (Thm 6.2 at beta/|X| over a huge universe: 182 at n = 10^5, epsilon = 1, 2^120 string keys), so the
dry run says it, with what the other families would do at the same epsilon: ``stability`` (approximate DP) hides
far fewer keys, and ``compact`` answers every key of the universe with its per-key error bar.

Every number here is computed from the spec (n, epsilon, beta, the universe's size, the contribution bounds),
never from data; the same functions compute the release's own accuracy statement.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpspark.engine.spec import ReleaseSpec

__all__ = ["HINT_DELTA", "exact_hidden_at_most", "hidden_at_most", "hiding_words"]

#: delta_SD is below 2^-_SD_BITS whenever (3|X|)^-n is (see :func:`hidden_at_most`)
_SD_BITS = 256
#: the delta at which the dry run states what ``stability`` would hide (pure_sparse has none of its own)
HINT_DELTA = Fraction(1, 10**8)


def hidden_at_most(mech: Any) -> int:
    """``pure_sparse``'s ``per_query_above``: keys whose exact count is at most this may be hidden.

    The release's accuracy (:func:`~dpspark.mechanisms.histogram.keepheavy.keepheavy_accuracy` with extra =
    gamma + delta_SD, :func:`~dpspark.mechanisms.histogram.pure_sparse.pure_sparse_histogram`) is 2 a(beta2/|X|)
    with beta2 = (beta - gamma - delta_SD)/2. delta_SD <= delta_s <= (3|X|)^-n <= 2^-256 (the other factors of
    delta_s are below 1), and a is non-increasing in beta, so a at beta2 without delta_SD and a at beta2 with
    2^-256 in its place bracket the value; when they agree (always, but for tiny n) it is exact without the
    n-fold power of |X| (8.7 s at n = 10^6). Else :func:`exact_hidden_at_most`.
    """
    from dpspark.mechanisms.histogram.keepheavy import accuracy_at

    n, size, gamma, beta = mech.n_range, mech.spec.universe.size, mech.mixing, mech.spec.beta
    if n * ((3 * size).bit_length() - 1) >= _SD_BITS:  # (3|X|)^-n <= 2^-_SD_BITS
        low = accuracy_at(mech.counting, (beta - gamma) / 2 / size)
        high = accuracy_at(mech.counting, (beta - gamma - Fraction(1, 1 << _SD_BITS)) / 2 / size)
        if low == high:
            return 2 * low
    return exact_hidden_at_most(mech)


def exact_hidden_at_most(mech: Any) -> int:
    """:func:`hidden_at_most` computed as the release computes it (delta_SD exactly; slow at large n)."""
    from dpspark.mechanisms.histogram.keepheavy import accuracy_at
    from dpspark.mechanisms.histogram.pure_sparse import mixing_delta
    from dpspark.mechanisms.histogram.sparse import s_bits_for, sd_bound

    n, size, gamma = mech.n_range, mech.spec.universe.size, mech.mixing
    sd = sd_bound(n, size, s_bits_for(n, size, mixing_delta(mech.counting.exp_eps, gamma, size, n)))
    half = (mech.spec.beta - gamma - sd) / 2
    return 2 * accuracy_at(mech.counting, half / size)


def _other(spec: "ReleaseSpec", name: str, **changes: Any) -> Any:
    """The mechanism ``name`` at the same spec (same epsilon, n, universe, bounds), or None if it refuses it."""
    from dpspark.errors import DPSparkError
    from dpspark.mechanisms.registry import mechanism_class

    try:
        return mechanism_class(name)(dataclasses.replace(spec, mechanism=name, options={}, **changes))
    except DPSparkError:
        return None


def hiding_words(mech: Any) -> str:
    """One sentence for the dry run: the keys ``pure_sparse`` will hide, and what stability and compact would do."""
    from dpspark.text import confidence, rounded

    spec = mech.spec
    unit = "units" if mech.c == 1 else "rows"
    words = [f"keys counted at most {hidden_at_most(mech)} times ({unit} per key, after contribution bounding) "
             "may be hidden (read as 0)"]
    delta = HINT_DELTA
    stability = _other(spec, "stability", delta=delta)
    if stability is not None:
        above = stability.plan()["tau"] + stability.accuracy_summary()["per_query_error_bar"]  # per_query_above
        words.append(f"'stability' (approximate DP, delta = {rounded(delta, 3)[0]}) would hide at most {above}")
    compact = _other(spec, "compact", delta=None)
    if compact is not None:
        bar = compact.accuracy_summary()["per_query_error_bar"]
        words.append(f"'compact' answers every key of the universe +-{bar} (w.p. >= {confidence(spec.beta)} per key)")
    return "; at the same epsilon, ".join(words[:2]) + ("" if len(words) < 3 else f", and {words[2]}")
