"""Release kinds -> the codec of their manifest section. The envelope (:mod:`dpspark.release.manifest`) dispatches here.

A codec checks its kind's own section against the envelope's already-checked common parts (passed as a
:class:`SectionContext`) and returns the parsed fields of :class:`~dpspark.release.manifest.Manifest`.
Each kind's section key must be absent from every other kind's manifest. Codecs import lazily, so
reading a sparse manifest never loads the compact code.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from dpspark.privacy import AccuracyStatement, PrivacyStatement
    from dpspark.release.manifest import FileEntry, ReadLimits

#: kind -> (section key in the manifest, "module:function" of the codec)
_BUILTIN: dict[str, tuple[str, str]] = {
    "sparse": ("bins", "dpspark.mechanisms.histogram.section:parse_bins_section"),
    "compact": ("compact", "dpspark.mechanisms.compact.section:parse_compact_section"),
}
_REGISTERED: dict[str, tuple[str, Callable[..., dict[str, Any]]]] = {}


@dataclass(frozen=True)
class SectionContext:
    """The envelope's checked values a section codec compares its own fields with."""

    max_units: int
    universe_size: int
    add_remove: "PrivacyStatement"
    accuracy: "AccuracyStatement"
    keys_per_unit: int = 1


def register_section(kind: str, key: str, codec: Callable[..., dict[str, Any]]) -> None:
    """Register the manifest section (``key``) codec of release kind ``kind``."""
    _REGISTERED[kind] = (key, codec)


def section_keys() -> dict[str, str]:
    """kind -> section key, for every known kind."""
    out = {kind: key for kind, (key, _) in _BUILTIN.items()}
    out.update({kind: key for kind, (key, _) in _REGISTERED.items()})
    return out


def parse_section(kind: str, obj: dict[str, Any], files: "dict[str, FileEntry]", name: str, limits: "ReadLimits",
                  ctx: SectionContext) -> dict[str, Any]:
    """The parsed fields of ``kind``'s section; another kind's section in the manifest is refused."""
    from dpspark.release.manifest import _fail

    keys = section_keys()
    if kind not in keys:
        raise _fail(name, f"unknown release kind {kind!r}")
    for other, key in keys.items():
        if other != kind and key in obj and key != keys[kind]:
            raise _fail(name, f"a {kind} release has no {key} section")
    if kind in _REGISTERED:
        codec = _REGISTERED[kind][1]
    else:
        module, _, attr = _BUILTIN[kind][1].partition(":")
        codec = getattr(importlib.import_module(module), attr)
    return codec(obj, files, name, limits, ctx)
