"""The ONE release envelope (``manifest.json``): read, check and dispatch every kind's manifest.

A manifest states everything public about a release and nothing else that depends on the data: the
header (schema and dpspark versions, the release kind, the creation time, the randomness generator, n =
``max_units``, declared and public), the kind's privacy and accuracy statements, the input as described
in the config, and the sha256 and byte size of every data file. It never holds row counts, distinct-key
counts or true counts.

Every kind goes through one path: :func:`parse_manifest` checks the bytes, the format and schema
version, the seal (:mod:`dpspark.release.header`), the JSON Schema of the kind's statement form, the
header and the listed files against the :class:`ReadLimits`, then looks the kind up in the one registry
(:mod:`dpspark.release.kinds`) and hands the rest to its statement form: histogram statements
(:mod:`dpspark.release.counts_form`, kinds ``sparse`` and ``compact``) or general statements
(``"envelope": "statement"``, :mod:`dpspark.release.statements`), whose kind codec checks its own section.

Reading order (each failure is a :class:`ReleaseFormatError` naming the file):
size limit, UTF-8, JSON (no NaN/Infinity, bounded depth), format and schema
version, checksum, JSON Schema, then semantic checks (exact numbers, limits).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Union

from dpspark.release.counts_form import (  # noqa: F401  (re-exported: the histogram manifest's names)
    REPLACEMENT_DELTA_EQUALS_DELTA,
    Manifest,
    relation_statements,
)
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.header import (  # noqa: F401  (re-exported: the envelope's shared names)
    DEFAULT_LIMITS,
    FORMAT,
    MANIFEST_NAME,
    MAX_DEPTH,
    PLACEHOLDER,
    SCHEMA_VERSION,
    FileEntry,
    ManifestHeader,
    ReadLimits,
    exact_int,
    fail,
    json_safe,
    manifest_header,
    seal_manifest,
    utc_now,
)
from dpspark.release.schema import SchemaViolation, validate

_CHECKSUM_FIELD = re.compile(rb'"manifest_sha256": "([0-9a-f]{64})"')
#: the ``envelope`` field's value of the general-statements form (absent: histogram statements)
STATEMENT_ENVELOPE = "statement"
#: statement form -> (JSON Schema file beside this module, "module:function" of its parser)
_FORMS = {
    "counts": ("manifest.schema.json", "dpspark.release.counts_form:parse_counts"),
    "statements": ("statement.schema.json", "dpspark.release.statements:parse_statements"),
}

AnyManifest = Union[Manifest, Any]


def read_regular_file(path: Path, limit: int, what: str) -> bytes:
    """Bytes of a regular file no larger than ``limit`` (never opens FIFOs or devices, so never hangs)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise fail(str(path), f"{what} is missing") from None
    except OSError as exc:
        raise fail(str(path), f"cannot stat {what}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise fail(str(path), f"{what} is not a regular file")
    if st.st_size > limit:
        raise fail(str(path), f"{what} is {st.st_size} bytes, above the limit of {limit} bytes")
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise fail(str(path), f"cannot read {what}: {exc.strerror}") from None
    if len(data) > limit:
        raise fail(str(path), f"{what} grew beyond the limit of {limit} bytes while being read")
    return data


def read_manifest(release_dir: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> AnyManifest:
    """Read and validate ``<release_dir>/manifest.json``; raises :class:`ReleaseFormatError`."""
    path = Path(release_dir) / MANIFEST_NAME
    data = read_regular_file(path, limits.max_manifest_bytes, "the manifest")
    return parse_manifest(data, str(path), limits)


def parse_manifest(data: bytes, name: str = MANIFEST_NAME, limits: ReadLimits = DEFAULT_LIMITS) -> AnyManifest:
    """Validate manifest bytes; every failure is a :class:`ReleaseFormatError` naming ``name``."""
    try:
        return _parse(data, name, limits)
    except ReleaseFormatError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError, ZeroDivisionError) as exc:
        # A check below missed a case: still report it as a format error, never a bare exception.
        raise fail(name, f"invalid manifest ({type(exc).__name__}: {str(exc)[:200]})") from None


def _depth_ok(obj: Any) -> bool:
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return True


def _reject_constant(token: str) -> None:
    raise ValueError(f"{token} is not allowed")


def _parse(data: bytes, name: str, limits: ReadLimits) -> AnyManifest:
    obj = _json_object(data, name, limits)
    form = _form_of(obj, name)
    schema_file, parser = _FORMS[form]
    try:
        validate(obj, form_schema(schema_file))
    except SchemaViolation as exc:
        raise fail(name, f"manifest does not match the schema: {exc}") from None
    header = _header(obj, name)
    files = _files(obj, name, limits)
    from dpspark.release.kinds import get_kind, resolve

    kind = get_kind(obj["kind"], name)
    if kind.form != form:
        raise fail(name, f"a {kind.name} release does not use the {form} form of the manifest")
    return resolve(parser)(obj, header, files, name, limits, kind)


def _json_object(data: bytes, name: str, limits: ReadLimits) -> dict[str, Any]:
    """The manifest's JSON object after the size, encoding, depth, format, version and checksum checks."""
    if len(data) > limits.max_manifest_bytes:
        raise fail(name, f"manifest is {len(data)} bytes, above the limit of {limits.max_manifest_bytes}")
    if not data:
        raise fail(name, "manifest is empty (truncated?)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(name, f"manifest is not valid UTF-8 (byte {exc.start}); the file is damaged") from None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise fail(name, "manifest is nested too deeply") from None
    except ValueError as exc:
        raise fail(name, f"manifest is not valid JSON ({str(exc)[:160]}); truncated or damaged?") from None
    if not isinstance(obj, dict):
        raise fail(name, "manifest must be a JSON object")
    if not _depth_ok(obj):
        raise fail(name, f"manifest is nested deeper than {MAX_DEPTH} levels")
    if obj.get("format") != FORMAT:
        raise fail(name, f"not a dpspark release manifest (format must be {FORMAT!r})")
    version = obj.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        shown = json.dumps(version)[:40]
        raise fail(name, f"manifest schema version {shown} is not supported (this dpspark reads version {SCHEMA_VERSION})")
    _check_checksum(data, name)
    return obj


def _form_of(obj: dict[str, Any], name: str) -> str:
    if "envelope" not in obj:  # histogram manifests predate the field
        return "counts"
    if obj["envelope"] != STATEMENT_ENVELOPE:
        raise fail(name, f"unknown manifest envelope {json.dumps(obj['envelope'])[:40]}")
    return "statements"


def _check_checksum(data: bytes, name: str) -> None:
    found = _CHECKSUM_FIELD.findall(data)
    if len(found) != 1:
        raise fail(name, "manifest has no single well-formed manifest_sha256 field; the file is damaged")
    claimed = found[0].decode()
    actual = hashlib.sha256(_CHECKSUM_FIELD.sub(f'"manifest_sha256": "{PLACEHOLDER}"'.encode(), data)).hexdigest()
    if actual != claimed:
        raise fail(name, "manifest checksum mismatch: the file was modified or damaged after it was written")


def _header(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """The :class:`ManifestHeader` fields, checked (the generator's test flag, n >= 1)."""
    rng = obj["rng"]
    if rng["test_only"] != ("TEST ONLY" in rng["name"].upper()):
        raise fail(name, "rng.test_only contradicts the generator's name")
    max_units = exact_int(obj["max_units"], name, "max_units", 256)
    if max_units < 1:
        raise fail(name, "max_units must be >= 1")
    return {
        "raw": obj, "schema_version": obj["schema_version"], "dpspark_version": obj["dpspark_version"],
        "kind": obj["kind"], "created_utc": obj["created_utc"], "rng_name": rng["name"],
        "rng_test_only": rng["test_only"], "max_units": max_units,
    }


def _files(obj: dict[str, Any], name: str, limits: ReadLimits) -> dict[str, FileEntry]:
    """The listed data files with their declared sizes, within the limits (the manifest never lists itself)."""
    if len(obj["files"]) > limits.max_files:
        raise fail(name, f"manifest lists more than {limits.max_files} files")
    files: dict[str, FileEntry] = {}
    for fname, entry in obj["files"].items():
        size = exact_int(entry["bytes"], name, f"files.{fname}.bytes", 128)
        if size > limits.max_file_bytes:
            raise fail(name, f"files.{fname} declares {size} bytes, above the limit of {limits.max_file_bytes} bytes")
        files[fname] = FileEntry(entry["sha256"], size)
    if MANIFEST_NAME in files:
        raise fail(name, "the manifest cannot list itself as a data file")
    return files


_SCHEMAS: dict[str, dict[str, Any]] = {}


def form_schema(file_name: str) -> dict[str, Any]:
    """A statement form's JSON Schema (``manifest.schema.json`` or ``statement.schema.json`` beside this module)."""
    if file_name not in _SCHEMAS:
        _SCHEMAS[file_name] = json.loads(Path(__file__).with_name(file_name).read_text("utf-8"))
    return _SCHEMAS[file_name]


def statement_schema() -> dict[str, Any]:
    """The JSON Schema of general-statement manifests."""
    return form_schema("statement.schema.json")
