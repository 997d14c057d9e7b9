"""Release kinds -> the function that writes one. The job dispatches on a mechanism's ``release_kind`` here.

Every writer takes ``(out_path, *, release, universe, key_columns, config, input_description, rng_name)``
and writes the release directory atomically. Readers are registered in :mod:`dpspark.lookup.kinds`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

Writer = Callable[..., Path]

_BUILTIN: dict[str, str] = {
    "sparse": "dpspark.release.sparse:write_sparse_release",
    "compact": "dpspark.release.compact:write_compact_release",
}
_REGISTERED: dict[str, Writer] = {}


def register_writer(kind: str, writer: Writer) -> None:
    """Register the writer of release kind ``kind``."""
    _REGISTERED[kind] = writer


def writer_for(kind: str) -> Writer:
    """The writer of release kind ``kind``."""
    if kind in _REGISTERED:
        return _REGISTERED[kind]
    target = _BUILTIN.get(kind)
    if target is None:
        raise ValueError(f"no writer is registered for release kind {kind!r}")
    module, _, attr = target.partition(":")
    fn: Any = getattr(importlib.import_module(module), attr)
    _REGISTERED[kind] = fn
    return fn
