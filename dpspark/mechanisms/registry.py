"""Mechanism names -> classes. The only place that maps a config's ``privacy.mechanism`` to code.

Built-in mechanisms are declared by their family folder (``dpspark/mechanisms/<family>/family.py``,
``MECHANISMS``), and the families are listed once, in :data:`dpspark.release.kinds.FAMILIES`. Classes are
imported on first use (the lookup library never pays for them); tests and plugins add a class with
:func:`register` or a whole family folder with :func:`register_family`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dpspark._lazy import LazyRegistry
from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.mechanisms.base import Mechanism


class UnknownMechanismError(DPSparkError, ValueError):
    """``privacy.mechanism`` names no registered mechanism."""


def _declared_mechanisms() -> dict[str, str]:
    """Every built-in family's ``MECHANISMS`` (name -> "module:Class"), read from the one list of families."""
    from dpspark.release.kinds import FAMILIES

    out: dict[str, str] = {}
    for module, _kinds in FAMILIES.values():
        for name, target in importlib.import_module(module).MECHANISMS.items():
            if name in out:
                raise LookupError(f"mechanism {name!r} is declared by two families")
            out[name] = target
    return out


_MECHANISMS = LazyRegistry(
    _declared_mechanisms(),
    lambda name: UnknownMechanismError(f"privacy.mechanism must be one of {names()}, got {name!r}"),
)


def register(cls: type["Mechanism"]) -> type["Mechanism"]:
    """Register a mechanism class under ``cls.name`` (usable as a class decorator)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError("a mechanism class needs a non-empty string 'name'")
    _MECHANISMS.register(name, cls)
    return cls


def unregister(name: str) -> None:
    """Remove a mechanism registered with :func:`register` (tests)."""
    _MECHANISMS.unregister(name)


def names() -> tuple[str, ...]:
    """Every available mechanism name, sorted."""
    return _MECHANISMS.names()


def mechanism_class(name: str) -> type["Mechanism"]:
    """The class registered under ``name``; :class:`UnknownMechanismError` names the choices."""
    return _MECHANISMS.get(name)


def construct(spec: Any) -> "Mechanism":
    """The mechanism ``spec`` names, built from it (its plan certified on construction).

    The release path builds it once per release, in its plan (:func:`dpspark.engine.plan.build_mechanism`).
    """
    return mechanism_class(spec.mechanism)(spec)


def register_family(module: str) -> None:
    """Register a family folder at runtime (a plugin): every class in its declaration module's ``MECHANISMS``
    and every kind in its ``KINDS`` (``module`` is that declaration module, e.g. ``"myplugin.family"``)."""
    from dpspark.release.kinds import register_kind

    decl = importlib.import_module(module)
    for name, target in decl.MECHANISMS.items():
        cls = _resolve(target)
        if cls.name != name:
            raise ValueError(f"{module}: MECHANISMS[{name!r}] is a class named {cls.name!r}")
        register(cls)
    for kind in decl.KINDS:
        register_kind(kind)


def unregister_family(module: str) -> None:
    """Remove what :func:`register_family` registered for ``module``."""
    from dpspark.release.kinds import unregister_kind

    decl = importlib.import_module(module)
    for name in decl.MECHANISMS:
        unregister(name)
    for kind in decl.KINDS:
        unregister_kind(kind.name)


def _resolve(target: Any) -> Any:
    if not isinstance(target, str):
        return target
    mod, _, attr = target.partition(":")
    return getattr(importlib.import_module(mod), attr)

