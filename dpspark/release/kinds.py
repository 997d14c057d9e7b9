"""The ONE registry of release kinds: each kind's section, writer, section codec and reader, declared once.

A family declares its kinds in its own folder (``dpspark/mechanisms/<family>/family.py``) as
:class:`ReleaseKind` values whose parts are ``"module:attr"`` strings, imported on first use: reading a
sparse release never loads the compact code, and the read side never imports a Mechanism, the mechanism
registry, the engine or Spark. :data:`FAMILIES` names each built-in family's declaration module and its kinds
(the one list a new family adds a line to); a plugin calls :func:`register_kind` at runtime
(:func:`dpspark.mechanisms.registry.register_family` registers a whole family folder).

Two statement forms share the one envelope (:mod:`dpspark.release.manifest`): ``"counts"`` (histogram
statements, :mod:`dpspark.release.counts_form`; the codec parses the kind's own top-level section and returns
the :class:`~dpspark.release.counts_form.Manifest` fields it fills) and ``"statements"`` (general statements,
:mod:`dpspark.release.statements`; the codec checks the ``section`` as ``check(section, manifest, name)``).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Union

from dpspark.release.errors import ReleaseFormatError

#: a part of a kind: the object itself, or a ``"module:attr"`` string imported on first use
Target = Union[str, Callable[..., Any], type, None]

#: family -> (the module that declares it, the release kinds it declares). The ONE list a new family adds a line
#: to: the module's ``KINDS`` feed this registry and its ``MECHANISMS`` the mechanism registry. Strings only:
#: nothing is imported until a kind or a mechanism is used, and then only that family's declaration.
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "histogram": ("dpspark.mechanisms.histogram.family", ("sparse",)),
    "compact": ("dpspark.mechanisms.compact.family", ("compact",)),
    "answers": ("dpspark.mechanisms.answers.family", ("answers",)),
    "samplers": ("dpspark.mechanisms.samplers.family", ("sample",)),
    "product": ("dpspark.mechanisms.product.family", ("distribution",)),
    "gaussian_model": ("dpspark.mechanisms.gaussian_model.family", ("gaussian_model",)),
    "groups": ("dpspark.mechanisms.groups.family", ("groups", "pure_groups")),
}
#: built-in kind -> the family module that declares it
_KIND_MODULES: dict[str, str] = {kind: module for module, kinds in FAMILIES.values() for kind in kinds}
FORMS = ("counts", "statements")
#: the writer of every ``statements`` kind unless it declares its own
STATEMENT_WRITER = "dpspark.release.statements:write_statement_release"


def resolve(target: Target) -> Any:
    """The object a part names (``"module:attr"`` imported now), or the object itself."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class ReleaseKind:
    """One release kind: what its manifest holds and which code writes, checks and reads it.

    ``writer(out_path, *, release, universe, key_columns, config, input_description, rng_name, created_utc)``
    writes the directory atomically (a ``statements`` kind's writer also gets ``kind=``); ``reader`` is the
    lookup class, called as ``cls(root, manifest=, verify=, limits=)``; ``codec`` parses or checks the own
    section (see the module docstring); ``plan_check(spec, mech, limits)`` refuses, before any spend, a plan
    whose manifest the codec would refuse. ``wide_bias``: the bias may need the sampler's range in bits.
    """

    name: str
    form: str
    section: str
    reader: Target
    writer: Target = STATEMENT_WRITER
    codec: Target = None
    plan_check: Target = None
    wide_bias: bool = False

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ValueError(f"release kind {self.name!r}: form must be one of {FORMS}")
        if self.form == "counts" and self.codec is None:
            raise ValueError(f"release kind {self.name!r}: a counts kind needs a section codec")

    def codec_fn(self) -> Any:
        """The section codec (None: a statements kind with no check of its own)."""
        return resolve(self.codec)

    def reader_cls(self) -> Any:
        """The lookup class."""
        return resolve(self.reader)

    def writer_fn(self) -> Callable[..., Any]:
        """The writer, with ``kind`` bound for a statements kind."""
        fn = resolve(self.writer)
        return functools.partial(fn, kind=self.name) if self.form == "statements" else fn


_REGISTERED: dict[str, ReleaseKind] = {}


def register_kind(kind: ReleaseKind) -> None:
    """Register (or replace) a release kind at runtime (a plugin's)."""
    if not isinstance(kind, ReleaseKind):
        raise TypeError("register_kind takes a ReleaseKind")
    _REGISTERED[kind.name] = kind


def unregister_kind(name: str) -> None:
    """Remove a kind registered at runtime (built-ins stay)."""
    _REGISTERED.pop(name, None)


def kind_names() -> tuple[str, ...]:
    """Every known kind, sorted."""
    return tuple(sorted(set(_KIND_MODULES) | set(_REGISTERED)))


@functools.lru_cache(maxsize=None)
def _builtin(name: str) -> ReleaseKind:
    decl = getattr(importlib.import_module(_KIND_MODULES[name]), "KINDS")
    found = [k for k in decl if k.name == name]
    if len(found) != 1:
        raise LookupError(f"{_KIND_MODULES[name]} does not declare release kind {name!r} once")
    return found[0]


def get_kind(name: Any, where: str = "manifest.json") -> ReleaseKind:
    """The kind ``name``; an unknown kind is a :class:`ReleaseFormatError` naming the file ``where``."""
    if isinstance(name, str):
        if name in _REGISTERED:
            return _REGISTERED[name]
        if name in _KIND_MODULES:
            return _builtin(name)
    raise ReleaseFormatError(f"{where}: unknown release kind {name!r}")


def writer_for(kind: str) -> Callable[..., Any]:
    """The writer of release kind ``kind`` (the runner dispatches on a mechanism's ``release_kind`` here)."""
    try:
        return get_kind(kind).writer_fn()
    except ReleaseFormatError:
        raise ValueError(f"no writer is registered for release kind {kind!r}") from None


def reader_for(kind: str, where: str = "manifest.json") -> Any:
    """The lookup class of release kind ``kind`` (:func:`dpspark.lookup.open_release` dispatches here)."""
    return get_kind(kind, where).reader_cls()
