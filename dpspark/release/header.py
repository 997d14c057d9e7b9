"""The envelope's shared parts: format and version, limits, file entries, the header, JSON encoding and the seal.

Every release kind's manifest starts with the same header (format, schema and dpspark versions, kind, time,
generator, n), lists its data files with sha256 and size, and is sealed the same way: ``manifest_sha256`` is
the sha256 of the manifest's exact bytes with that field's value replaced by 64 zeros, so any change to
the file (even one that parses to the same JSON) is detected. The reader of this envelope is
:mod:`dpspark.release.manifest`; the kinds' statement forms are :mod:`dpspark.release.counts_form` and
:mod:`dpspark.release.statements`.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Iterator, Mapping

from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import frac_to_str, int_to_str, str_to_frac, str_to_int

MANIFEST_NAME = "manifest.json"
FORMAT = "dpspark-release"
SCHEMA_VERSION = 1
PLACEHOLDER = "0" * 64
#: Deepest JSON nesting a manifest may have (the writer's is far below).
MAX_DEPTH = 32
#: Ints inside free-form sections (config, parameters) above this magnitude are written as strings.
_JSON_SAFE_INT = 1 << 53
#: a release id: 128 random bits drawn at the ledger charge, as 32 lower-case hex digits (the ledger stores it too)
RELEASE_ID = re.compile(r"^[0-9a-f]{32}$")
_RELEASE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("dpspark_release_id", default=None)


@contextmanager
def release_identity(release_id: str | None) -> Iterator[None]:
    """Within this block every manifest written states ``release_id`` (None: none), so the charge names the release."""
    if release_id is not None and not RELEASE_ID.match(release_id):
        raise ValueError("a release id is 32 lower-case hex digits")
    token = _RELEASE_ID.set(release_id)
    try:
        yield
    finally:
        _RELEASE_ID.reset(token)


@dataclass(frozen=True)
class ReadLimits:
    """Resource limits checked before anything is allocated (raise them for unusual releases)."""

    max_manifest_bytes: int = 256 << 20
    max_file_bytes: int = 64 << 30
    max_rows: int = 1 << 28
    max_files: int = 1000
    #: Largest numerator/denominator of a delta (PureSparse's delta ~ 2^(-66 n) needs about 66 n bits).
    max_delta_bits: int = 1 << 20
    #: Largest bit length of a compact release's sampler range d (GeoSample's d grows like n log2(p)).
    max_sampler_d_bits: int = 1 << 18


DEFAULT_LIMITS = ReadLimits()


@dataclass(frozen=True)
class FileEntry:
    """A data file's declared sha256 (hex) and byte size."""

    sha256: str
    size: int


@dataclass(frozen=True)
class ManifestHeader:
    """The parts every manifest has, whatever its kind. ``raw`` is the JSON object as read."""

    raw: dict[str, Any] = field(repr=False)
    schema_version: int
    dpspark_version: str
    kind: str
    created_utc: str
    rng_name: str
    rng_test_only: bool
    max_units: int


@dataclass(frozen=True)
class Envelope:
    """The envelope's checked values, handed to a kind's statement form: header fields and the data files."""

    header: dict[str, Any]
    files: dict[str, FileEntry]


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


def json_safe(value: Any, where: str = "value", depth: int = 0) -> Any:
    """A JSON-ready copy: Fractions as exact strings, ints beyond 2^53 as strings, non-finite floats as null."""
    if depth > 16:
        raise ValueError(f"{where}: nested too deeply for a manifest")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) < _JSON_SAFE_INT else int_to_str(value)
    if isinstance(value, Fraction):
        return frac_to_str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # report
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: keys must be strings")
            out[k] = json_safe(v, f"{where}.{k}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [json_safe(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise TypeError(f"{where}: cannot record a {type(value).__name__} in a manifest")


def manifest_header(kind: str, rng_name: str, created_utc: str | None, max_units: int) -> dict[str, Any]:
    """The fields every manifest starts with (format, versions, kind, time, generator, n; the release id when
    :func:`release_identity` is active)."""
    from dpspark import __version__

    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "dpspark_version": __version__,
        "kind": kind,
        "created_utc": created_utc or utc_now(),
        "rng": {"name": rng_name, "test_only": "TEST ONLY" in rng_name.upper()},
        "max_units": int_to_str(max_units),
        **({} if _RELEASE_ID.get() is None else {"release_id": _RELEASE_ID.get()}),
    }


def utc_now() -> str:
    """The creation time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def seal_manifest(manifest: Mapping[str, Any]) -> bytes:
    """The manifest's bytes with ``manifest_sha256`` filled in (any existing value is replaced).

    Deterministic: sorted keys, two-space indent, ASCII only, no NaN.
    """
    body = dict(manifest)
    body["manifest_sha256"] = PLACEHOLDER
    text = json.dumps(body, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
    data = text.encode("ascii")
    digest = hashlib.sha256(data).hexdigest()
    marker = f'"manifest_sha256": "{PLACEHOLDER}"'.encode()
    if data.count(marker) != 1:  # a free-form field contained the marker text itself
        raise ValueError("manifest fields may not contain the manifest_sha256 marker")
    return data.replace(marker, f'"manifest_sha256": "{digest}"'.encode())


# ---------------------------------------------------------------------------------------------
# reading helpers shared by the envelope and the kinds' codecs
# ---------------------------------------------------------------------------------------------


def fail(name: str, message: str) -> ReleaseFormatError:
    """The format error naming the file ``name``."""
    return ReleaseFormatError(f"{name}: {message}")


def exact_int(text: str, name: str, where: str, max_bits: int) -> int:
    """An exact integer field (a format error naming the file and the field)."""
    try:
        return str_to_int(text, max_bits)
    except ValueError as exc:
        raise fail(name, f"{where}: {exc}") from None


def exact_frac(text: str, name: str, where: str, max_bits: int = 4096) -> Fraction:
    """An exact rational field (a format error naming the file and the field)."""
    try:
        return str_to_frac(text, max_bits)
    except ValueError as exc:
        raise fail(name, f"{where}: {exc}") from None
