"""Step-count instrumentation for timing side channels (docs/balcer-vadhan-notes.md §E10).

Strict time means every loop has a public worst-case bound and iteration
counts may vary only below it. These helpers count steps through public
entry points, so tests can assert the bounds on neighbouring inputs:

* :class:`CountingRandom` wraps a RandomSource and counts its draws;
* :func:`count_calls` counts calls of one attribute of one object (e.g. a
  mechanism's ``_cdf`` or ``draw``) by shadowing it with a counting wrapper;
* :func:`count_line_hits` counts executions of marked source lines (a loop
  body) with ``sys.settrace``, for loops that call nothing countable;
* :func:`histogram_step_bounds` states the public bounds of the driver
  histogram algorithms, from their docstrings.

Instrumentation only observes; it never changes what is drawn or released.
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from dpspark.rng import RandomSource


class CountingRandom:
    """A RandomSource that forwards to ``inner`` and counts calls of bits/uniform/uniform_mpz."""

    def __init__(self, inner: RandomSource) -> None:
        self.inner = inner
        self.name = f"counting({inner.name})"
        self.lam = inner.lam
        self.calls: Counter[str] = Counter()

    @property
    def total(self) -> int:
        """All draws so far."""
        return sum(self.calls.values())

    def bits(self, k: int) -> int:
        """Forward ``bits`` and count it."""
        self.calls["bits"] += 1
        return self.inner.bits(k)

    def uniform(self, n: int) -> int:
        """Forward ``uniform`` and count it."""
        self.calls["uniform"] += 1
        return self.inner.uniform(n)

    def uniform_mpz(self, n: int) -> Any:
        """Forward ``uniform_mpz`` (the gmpy2 fast path of ``draw``) and count it."""
        self.calls["uniform"] += 1
        fast = getattr(self.inner, "uniform_mpz", None)
        return fast(n) if fast is not None else self.inner.uniform(n)


@contextmanager
def count_calls(obj: Any, attr: str) -> Iterator[Counter[str]]:
    """Within the block, every call of ``obj.<attr>`` is counted in ``counter[attr]``.

    Shadows the attribute on the instance (class methods stay untouched) and restores it afterwards.
    """
    original = getattr(obj, attr)
    had_own = attr in getattr(obj, "__dict__", {})
    counter: Counter[str] = Counter()

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counter[attr] += 1
        return original(*args, **kwargs)

    setattr(obj, attr, wrapper)
    try:
        yield counter
    finally:
        if had_own:
            setattr(obj, attr, original)
        else:
            delattr(obj, attr)


def marked_lines(function: Callable[..., Any], marker: str) -> tuple[CodeType, frozenset[int]]:
    """(code object, line numbers) of the lines of ``function``'s source containing ``marker``."""
    func = inspect.unwrap(function)
    code = func.__code__
    lines, start = inspect.getsourcelines(func)
    hits = frozenset(start + i for i, text in enumerate(lines) if marker in text)
    if not hits:
        raise ValueError(f"no line of {func.__qualname__} contains {marker!r}")
    return code, hits


@contextmanager
def count_line_hits(targets: Sequence[tuple[Callable[..., Any], str]]) -> Iterator[Counter[str]]:
    """Count executions of the lines containing each marker in each function (keyed by qualname).

    Uses ``sys.settrace`` on the current thread; the previous tracer is restored afterwards.
    """
    wanted: dict[CodeType, frozenset[int]] = {}
    for function, marker in targets:
        code, lines = marked_lines(function, marker)
        wanted[code] = wanted.get(code, frozenset()) | lines
    counter: Counter[str] = Counter()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno in wanted[frame.f_code]:
            counter[frame.f_code.co_qualname] += 1
        return local

    def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
        return local if event == "call" and frame.f_code in wanted else None

    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        yield counter
    finally:
        sys.settrace(previous)


@dataclass(frozen=True)
class StepBounds:
    """Public worst-case step counts of one driver histogram call (see each algorithm's docstring)."""

    noisy_counts: int  # calls of mechanism.draw
    random_draws: int  # calls of rng.bits / rng.uniform
    order_statistic_levels: int  # calls of the bin sampler (ApproxBinSample), each <= 2t inner iterations
    constrained_points: int = 0  # CompactHistogram: interpolation points |S| (the subproduct tree's size)
    coefficients: int = 0  # CompactHistogram: l = n + 1 released coefficients, whatever the data


def histogram_step_bounds(algorithm: str, n: int, universe_size: int, bins: int | None = None) -> StepBounds:
    """The documented public bounds, which depend only on (n, |X|, |X'|), never on the data.

    * BasicHistogram: exactly |X'| noisy counts, one draw each.
    * StabilityHistogram: <= n noisy counts (the nonzero bins), one draw each.
    * SparseHistogram: <= n noisy counts, n+1 distinct empty bins (one draw each,
      a fixed number of search rounds each), n order-statistic levels (one draw each).
    * PureSparseHistogram: Sparse plus 2n draws of P and one mixing coin.
    * CompactHistogram: <= n noisy counts (one draw each), <= n target draws
      (one each, from the preimage interval), one rng.bits draw for R;
      |S| <= n interpolation points and exactly l = n + 1 coefficients.
    """
    if algorithm == "basic":
        if bins is None:
            raise ValueError("BasicHistogram's bound is |X'|: pass bins")
        return StepBounds(bins, bins, 0)
    if algorithm == "stability":
        return StepBounds(n, n, 0)
    if algorithm == "sparse":
        return StepBounds(n, n + (n + 1) + n, n)
    if algorithm == "pure_sparse":
        return StepBounds(n, n + (n + 1) + n + 2 * n + 1, n)
    if algorithm == "compact":
        return StepBounds(n, n + n + 1, 0, constrained_points=n, coefficients=n + 1)
    raise ValueError(f"unknown algorithm {algorithm!r}")
