"""Mechanism names -> classes. The only place that maps a config's ``privacy.mechanism`` to code.

Built-in mechanisms are imported lazily (the lookup library never pays for them); tests and plugins
add their own with :func:`register`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.mechanisms.base import Mechanism

#: built-in mechanism name -> "module:Class" (imported on first use)
_BUILTIN: dict[str, str] = {
    "dense": "dpspark.mechanisms.histograms:DenseHistogram",
    "stability": "dpspark.mechanisms.histograms:StabilityHistogram",
    "pure_sparse": "dpspark.mechanisms.histograms:PureSparseHistogram",
    "compact": "dpspark.mechanisms.compact:CompactHistogram",
}
_REGISTERED: dict[str, type["Mechanism"]] = {}


class UnknownMechanismError(DPSparkError, ValueError):
    """``privacy.mechanism`` names no registered mechanism."""


def register(cls: type["Mechanism"]) -> type["Mechanism"]:
    """Register a mechanism class under ``cls.name`` (usable as a class decorator)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError("a mechanism class needs a non-empty string 'name'")
    _REGISTERED[name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a mechanism registered with :func:`register` (tests)."""
    _REGISTERED.pop(name, None)


def names() -> tuple[str, ...]:
    """Every available mechanism name, sorted."""
    return tuple(sorted(set(_BUILTIN) | set(_REGISTERED)))


def mechanism_class(name: str) -> type["Mechanism"]:
    """The class registered under ``name``; :class:`UnknownMechanismError` names the choices."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    target = _BUILTIN.get(name) if isinstance(name, str) else None
    if target is None:
        raise UnknownMechanismError(f"privacy.mechanism must be one of {names()}, got {name!r}")
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    _REGISTERED[name] = cls
    return cls
