"""An exhaustive 'random source' that runs a function on every randomness path, for exact output laws.

``exact_law(fn)`` returns {output: probability} by depth-first enumeration of
all draws: ``uniform(N)`` branches N ways (1/N each), ``bits(k)`` 2^k ways, and
the test-only ``choose(weights)`` branches by the given exact weights. With
``collapse_bits_above=k`` a ``bits(j)`` draw with j > k returns 0 without
branching: valid only when the caller ignores that value (an injected sampler
draws through ``choose`` instead), which the tests that use it arrange.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any

import pytest


class _Exhausted(Exception):
    pass


class EnumeratingRandom:
    """Replays a fixed prefix of choices and records the arity/weights of each draw."""

    name = "enumerating (TEST ONLY)"
    lam = 128

    def __init__(self, path: list[int], collapse_bits_above: int | None) -> None:
        self.path = path
        self.pos = 0
        self.weights: list[int | list[Fraction]] = []  # an int N means N equally likely choices
        self.collapse = collapse_bits_above
        self.biased_draws = 0

    def _branch(self, weights: int | list[Fraction]) -> int:
        if self.pos == len(self.path):
            first = 0 if isinstance(weights, int) else next(i for i, w in enumerate(weights) if w)
            self.path.append(first)
        choice = self.path[self.pos]
        self.weights.append(weights)
        self.pos += 1
        return choice

    def uniform(self, n: int) -> int:
        """All of [1, n], each with weight 1/n."""
        if n > 1 << 16:
            raise _Exhausted(f"uniform({n}) is too wide to enumerate")
        return self._branch(n) + 1

    def bits(self, k: int) -> int:
        """All of [0, 2^k), or a collapsed 0 for wide draws whose value is ignored."""
        if self.collapse is not None and k > self.collapse:
            return 0
        if k > 16:
            raise _Exhausted(f"bits({k}) is too wide to enumerate")
        return self._branch(1 << k)

    def choose(self, weights: list[Fraction]) -> int:
        """Index i with probability weights[i] (test-only extension)."""
        return self._branch(list(weights))


def exact_law(
    fn: Callable[[EnumeratingRandom], Hashable], *, collapse_bits_above: int | None = None, max_paths: int = 200_000
) -> dict[Any, Fraction]:
    """{fn's output: exact probability} over all randomness paths."""
    law: dict[Any, Fraction] = {}
    path: list[int] = []
    for _ in range(max_paths):
        rng = EnumeratingRandom(path, collapse_bits_above)
        out = fn(rng)
        del path[rng.pos :]
        den = 1
        prob = Fraction(1)
        for i, w in enumerate(rng.weights):
            if isinstance(w, int):
                den *= w
            else:
                prob *= w[path[i]]
        law[out] = law.get(out, 0) + (prob / den if prob != 1 else Fraction(1, den))
        # advance the odometer to the next nonzero-weight choice
        while path:
            i = len(path) - 1
            w = rng.weights[i]
            if isinstance(w, int):
                nxt = path[i] + 1 if path[i] + 1 < w else None
            else:
                nxt = next((j for j in range(path[i] + 1, len(w)) if w[j]), None)
            if nxt is None:
                path.pop()
            else:
                path[i] = nxt
                break
        if not path:
            return {k: v for k, v in law.items() if v}
    raise _Exhausted("too many randomness paths")


def sd(p: dict[Any, Fraction], q: dict[Any, Fraction]) -> Fraction:
    """Exact statistical distance of two finite laws."""
    keys = set(p) | set(q)
    return sum((abs(p.get(k, Fraction(0)) - q.get(k, Fraction(0))) for k in keys), Fraction(0)) / 2


def test_exact_law_of_two_dice_sum() -> None:
    law = exact_law(lambda r: r.uniform(3) + r.uniform(2))
    assert law == {2: Fraction(1, 6), 3: Fraction(1, 3), 4: Fraction(1, 3), 5: Fraction(1, 6)}


def test_exact_law_with_data_dependent_draws_and_weights() -> None:
    def fn(r: EnumeratingRandom) -> int:
        first = r.choose([Fraction(1, 4), Fraction(0), Fraction(3, 4)])
        return first if first == 0 else first + r.uniform(2)

    assert exact_law(fn) == {0: Fraction(1, 4), 3: Fraction(3, 8), 4: Fraction(3, 8)}


def test_exact_law_refuses_wide_draws() -> None:
    with pytest.raises(_Exhausted):
        exact_law(lambda r: r.bits(40))
    assert exact_law(lambda r: r.bits(40), collapse_bits_above=8) == {0: Fraction(1)}


def test_sd_of_identical_and_disjoint_laws() -> None:
    p = {1: Fraction(1, 2), 2: Fraction(1, 2)}
    assert sd(p, p) == 0
    assert sd(p, {3: Fraction(1)}) == 1
