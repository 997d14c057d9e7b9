"""Validation of histogram inputs and the shared "keep the strictly heavy bins" selection.

Universe indices are 0-based: X = {0, ..., |X|-1} (so 2^128 indices fit in 16
bytes); Appendix A works on [1, N] and is shifted by one at the call sites.
Error messages never contain a true count or an index taken from the data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Union

from dpspark.noise import CountingMechanism
from dpspark.exact import parse_rational

CountsLike = Union[Mapping[Any, Any], tuple[Sequence[Any], Sequence[Any]]]


def _as_int(value: Any, what: str) -> int:
    """An exact int from an int or numpy integer; floats and bools are refused."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be integers, not bool")
    if isinstance(value, int):
        return value
    if type(value).__module__ == "numpy" and "int" in type(value).__name__:
        return int(value)
    raise TypeError(f"{what} must be integers, got {type(value).__name__}")


def check_universe(universe_size: Any, n: int, *, sparse: bool) -> int:
    """Validate |X| (an int >= 1; >= 2n+1 for the sparse algorithms, BV Alg 6.4)."""
    size = _as_int(universe_size, "universe_size")
    if size < 1:
        raise ValueError("universe_size must be >= 1")
    if sparse and size < 2 * n + 1:
        raise ValueError(
            f"this algorithm needs |X| >= 2n+1 = {2 * n + 1} (so that n+1 empty bins always exist); "
            "use BasicHistogram over all of X instead"
        )
    return size


def check_mechanism(mechanism: CountingMechanism, n: int) -> None:
    """The mechanism must be a CountingMechanism on the same count range [0, n]."""
    if not isinstance(mechanism, CountingMechanism):
        raise TypeError("mechanism must be a dpspark.noise.CountingMechanism")
    if mechanism.n != n:
        raise ValueError(f"mechanism.n = {mechanism.n} differs from the declared n = {n}")


def check_counts(counts: CountsLike, universe_size: int, n: int) -> tuple[list[int], list[int]]:
    """Return (indices ascending, counts) of the nonzero bins; zero counts are dropped.

    ``counts`` is a mapping {index: count} or a pair (indices, counts) of equal-length
    sequences (numpy integer arrays are fine). Checks: indices distinct and in
    [0, |X|), counts >= 0 and their total <= n (the add/remove relation's bound).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n (the public bound on the number of units) must be an int >= 1")
    if isinstance(counts, Mapping):
        pairs: Iterable[tuple[Any, Any]] = counts.items()
    elif isinstance(counts, tuple) and len(counts) == 2:
        idx, cnt = counts
        if len(idx) != len(cnt):
            raise ValueError("indices and counts must have the same length")
        fast = _check_counts_int64(idx, cnt, universe_size, n)
        if fast is not None:
            return fast
        pairs = zip(idx, cnt)
    else:
        raise TypeError("counts must be a mapping {index: count} or a pair (indices, counts)")
    merged: dict[int, int] = {}
    total = 0
    for raw_x, raw_c in pairs:
        x = _as_int(raw_x, "indices")
        c = _as_int(raw_c, "counts")
        if not 0 <= x < universe_size:
            raise ValueError("an index lies outside [0, |X|)")
        if c < 0:
            raise ValueError("counts must be >= 0")
        if x in merged:
            raise ValueError("indices must be distinct")
        merged[x] = c
        total += c
        if total > n:
            raise ValueError("the counts total more than the declared bound n")
    keys = sorted(x for x, c in merged.items() if c > 0)
    return keys, [merged[x] for x in keys]


def _check_counts_int64(idx: Any, cnt: Any, universe_size: int, n: int) -> tuple[list[int], list[int]] | None:
    """The same checks and result as :func:`check_counts`, vectorised, when everything fits in int64.

    None (use the exact Python path) when an index or count does not fit, or an element is not an
    integer (bools and floats are refused there, with the same messages). Exact: integer arrays only,
    and the total is bounded before it is summed, so it cannot overflow.
    """
    import numpy as np

    if len(idx) == 0 or len(idx) > 1 << 31:
        return None
    for seq in (idx, cnt):  # numpy would read True as 1: bools go to the exact path, which refuses them
        if not isinstance(seq, np.ndarray) and bool in set(map(type, seq)):
            return None
    try:
        xs = np.asarray(idx)
        cs = np.asarray(cnt)
    except (OverflowError, ValueError, TypeError):
        return None
    if xs.dtype.kind not in "iu" or cs.dtype.kind not in "iu" or xs.ndim != 1 or cs.ndim != 1:
        return None  # object arrays (big ints), bools, floats: the exact path decides
    xs = xs.astype(np.int64, copy=False) if xs.dtype.kind == "i" or xs.max() < 1 << 63 else None
    if xs is None or cs.max() >= 1 << 62:
        return None
    cs = cs.astype(np.int64, copy=False)
    if xs.min() < 0 or int(xs.max()) >= universe_size:
        raise ValueError("an index lies outside [0, |X|)")
    if cs.min() < 0:
        raise ValueError("counts must be >= 0")
    if int(cs.max()) > n or len(cs) * int(cs.max()) >= 1 << 63:  # a total above n, or one int64 cannot hold
        if int(cs.max()) > n:
            raise ValueError("the counts total more than the declared bound n")
        return None
    if int(cs.sum()) > n:
        raise ValueError("the counts total more than the declared bound n")
    order = np.argsort(xs, kind="stable")
    xs, cs = xs[order], cs[order]
    if len(xs) > 1 and bool(np.any(xs[1:] == xs[:-1])):
        raise ValueError("indices must be distinct")
    keep = cs > 0
    return xs[keep].tolist(), cs[keep].tolist()


def check_beta(beta: Any) -> Fraction:
    """beta decides nothing released but must still be exact (docs/balcer-vadhan-notes.md §E6): in (0, 1)."""
    b = parse_rational(beta, "beta")
    if not 0 < b < 1:
        raise ValueError("beta must lie in (0, 1)")
    return b


def keep_strictly_heavy(pairs: list[tuple[int, int]], k: int) -> tuple[list[int], list[int]]:
    """Bins whose count is strictly above the k-th largest count, in ascending index order.

    Ties with the k-th count are dropped, whatever order they came in, so any
    tie-break gives the same output (Alg 6.1 step 3).
    """
    if len(pairs) < k:
        raise ValueError("need at least k candidate bins")
    threshold = sorted((y for _, y in pairs), reverse=True)[k - 1]
    kept = sorted((x, y) for x, y in pairs if y > threshold)
    return [x for x, _ in kept], [y for _, y in kept]


def is_power_of_two(value: int) -> bool:
    """True for 1, 2, 4, ...: such uniform draws carry no mod-N bias."""
    return value >= 1 and value & (value - 1) == 0
