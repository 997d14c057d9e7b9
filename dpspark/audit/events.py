"""Events E on a pipeline's output whose probabilities the auditor compares under D and D'.

A pipeline's output is either a count (an int, for counting mechanisms) or a
released partial histogram: a :class:`dpspark.mechanisms.histogram.HistogramRelease`, a
mapping {key: count}, or anything with an ``as_dict()`` method (so a Spark-path
callable can return its own release object). Keys are whatever the pipeline
releases (0-based indexes for the driver algorithms).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Event:
    """A named yes/no property of one pipeline output."""

    name: str
    test: Callable[[Any], bool]

    def __call__(self, output: Any) -> bool:
        return bool(self.test(output))


def released_mapping(output: Any) -> Mapping[Any, int]:
    """The released partial vector {key: count} of a histogram-like output."""
    as_dict = getattr(output, "as_dict", None)
    if callable(as_dict):
        return as_dict()  # type: ignore[no-any-return]
    if isinstance(output, Mapping):
        return output
    raise TypeError(f"expected a histogram release or a mapping, got {type(output).__name__}")


def _count(output: Any) -> int:
    if isinstance(output, bool) or not isinstance(output, int):
        raise TypeError(f"expected a count (int) output, got {type(output).__name__}")
    return output


def key_appears(key: Any) -> Event:
    """E = {key is in the released partial histogram}."""
    return Event(f"key {key!r} appears", lambda out: key in released_mapping(out))


def count_at_least(key: Any, v: int) -> Event:
    """E = {key is released with a count >= v} (an absent key counts as not >= v)."""
    def test(out: Any) -> bool:
        got = released_mapping(out).get(key)
        return got is not None and got >= v

    return Event(f"count[{key!r}] >= {v}", test)


def length_equals(k: int) -> Event:
    """E = {exactly k keys are released}."""
    return Event(f"{k} keys released", lambda out: len(released_mapping(out)) == k)


def length_at_least(k: int) -> Event:
    """E = {at least k keys are released}."""
    return Event(f">= {k} keys released", lambda out: len(released_mapping(out)) >= k)


def value_equals(z: int) -> Event:
    """E = {the released count is z} (counting-mechanism outputs)."""
    return Event(f"output == {z}", lambda out: _count(out) == z)


def value_at_least(v: int) -> Event:
    """E = {the released count is >= v} (counting-mechanism outputs)."""
    return Event(f"output >= {v}", lambda out: _count(out) >= v)


def value_at_most(v: int) -> Event:
    """E = {the released count is <= v} (counting-mechanism outputs)."""
    return Event(f"output <= {v}", lambda out: _count(out) <= v)


def predicate(name: str, test: Callable[[Any], bool]) -> Event:
    """Any user-supplied event."""
    return Event(name, test)


def complement(event: Event) -> Event:
    """E^c, to audit both tails of a threshold event."""
    return Event(f"not ({event.name})", lambda out: not event(out))


def field_value_in(key: Any, lo: int, hi: int) -> Event:
    """E = {the compact release's field value iota(p(phi(key))) lies in [lo, hi]} (a CompactView output)."""
    def test(out: Any) -> bool:
        return lo <= out.field_values[key] <= hi

    label = f"field value at {key!r} == {lo}" if lo == hi else f"field value at {key!r} in [{lo}, {hi}]"
    return Event(label, test)
