"""Release kinds -> the lookup class that opens one. :func:`dpspark.lookup.open_release` dispatches here.

Each class is imported only when a release of its kind is opened, so opening a sparse release never
loads the GF(2^m) kernels, and opening a compact one never loads the sparse histogram code or Spark.
"""

from __future__ import annotations

import importlib
from typing import Any

from dpspark.release.errors import ReleaseFormatError

_BUILTIN: dict[str, str] = {
    "sparse": "dpspark.lookup.release:ReleaseLookup",
    "compact": "dpspark.lookup.compact:CompactReleaseLookup",
}
_REGISTERED: dict[str, Any] = {}


def register_reader(kind: str, cls: Any) -> None:
    """Register the lookup class of release kind ``kind`` (called as ``cls(root, manifest=, verify=, limits=)``)."""
    _REGISTERED[kind] = cls


def reader_for(kind: str, where: str = "manifest.json") -> Any:
    """The lookup class of release kind ``kind``; an unknown kind is a :class:`ReleaseFormatError`."""
    if kind in _REGISTERED:
        return _REGISTERED[kind]
    target = _BUILTIN.get(kind)
    if target is None:
        raise ReleaseFormatError(f"{where}: unknown release kind {kind!r}")
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    _REGISTERED[kind] = cls
    return cls
