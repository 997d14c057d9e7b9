"""Lazy package exports: ``from pkg import Name`` imports only the submodule that defines Name.

The lookup library must stay small: opening a compact release must not load the sparse histogram code,
the writers or Spark just because a package's ``__init__`` re-exports them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``names[attr]`` (a submodule of ``package``) on first use."""

    def __getattr__(attr: str) -> Any:
        module = names.get(attr)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        target = module if module.startswith("dpspark.") else f"{package}.{module}"  # a moved submodule
        return getattr(importlib.import_module(target), attr)

    return __getattr__


class LazyRegistry:
    """Names -> objects, where built-in entries are ``"module:attr"`` strings imported on first use.

    One shape for every dpspark registry (mechanisms, release writers, lookup readers), so the lookup
    library never imports what it does not open. ``missing(name)`` builds the error for an unknown name.
    """

    def __init__(self, builtin: Mapping[str, str], missing: Callable[[str], Exception]) -> None:
        self._builtin = dict(builtin)
        self._registered: dict[str, Any] = {}
        self._missing = missing

    def register(self, name: str, obj: Any) -> None:
        """Register (or replace) ``name``."""
        self._registered[name] = obj

    def unregister(self, name: str) -> None:
        """Remove a registered ``name`` (built-ins stay)."""
        self._registered.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """Every known name, sorted."""
        return tuple(sorted(set(self._builtin) | set(self._registered)))

    def get(self, name: str) -> Any:
        """The object registered under ``name``, importing a built-in on first use."""
        if name in self._registered:
            return self._registered[name]
        target = self._builtin.get(name) if isinstance(name, str) else None
        if target is None:
            raise self._missing(name)
        module, _, attr = target.partition(":")
        obj = getattr(importlib.import_module(module), attr)
        self._registered[name] = obj
        return obj
