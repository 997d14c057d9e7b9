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
        return getattr(importlib.import_module(f"{package}.{module}"), attr)

    return __getattr__
