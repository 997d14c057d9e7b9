"""The release manifest (``manifest.json``): the one owner of its schema, writer and hardened reader.

A manifest states everything public about a release and nothing else that
depends on the data: schema and dpspark versions, the release kind, the
mechanism with its exact parameters, n (``max_units``, declared, public), the
privacy statement under add/remove of one unit (the primary relation) and
under replacement (two steps, by group privacy), the accuracy statement (β,
per-query and simultaneous error bars and the threshold above which the
per-query bar holds), the universe spec, the input as described in the
config, the creation time, the randomness generator, and the sha256 and byte
size of every data file. It never holds row counts, distinct-key counts or
true counts.

Integrity: ``manifest_sha256`` is the sha256 of the manifest's exact bytes
with that field's value replaced by 64 zeros, so any change to the file (even
one that parses to the same JSON) is detected. The JSON Schema is
``manifest.schema.json`` beside this module. Kind ``sparse`` has a ``bins``
section (``bins.parquet``); kind ``compact`` has a ``compact`` section (the
field, the coefficient file ``coefficients.arrow``, the maps iota and phi, and
every parameter of the counting mechanism and of the empty-bin sampler G),
parsed into :class:`CompactInfo`.

Releases that are not keyed histograms (answers, samples, learned distributions) use the statement
envelope (``"envelope": "statement"``, :mod:`dpspark.release.statement_envelope`): the same format, version,
checksum and limits, with general exact privacy and accuracy statements; :func:`read_manifest` returns
a :class:`~dpspark.release.statement_envelope.StatementManifest` for them.

Reading order (each failure is a :class:`ReleaseFormatError` naming the file):
size limit, UTF-8, JSON (no NaN/Infinity, bounded depth), format and schema
version, checksum, JSON Schema, then semantic checks (exact numbers, limits).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from dpspark.privacy.accuracy import AccuracyStatement
from dpspark.privacy.relations import AddRemove, Substitute
from dpspark.privacy.statement import PrivacyStatement
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import frac_log2, frac_to_str, int_to_str, str_to_frac, str_to_int
from dpspark.release.schema import SchemaViolation, manifest_schema, validate

MANIFEST_NAME = "manifest.json"
FORMAT = "dpspark-release"
SCHEMA_VERSION = 1
KINDS = ("sparse", "compact")
_PLACEHOLDER = "0" * 64
_CHECKSUM_FIELD = re.compile(rb'"manifest_sha256": "([0-9a-f]{64})"')
#: Deepest JSON nesting a manifest may have (the writer's is far below).
MAX_DEPTH = 32
#: Ints inside free-form sections (config, parameters) above this magnitude are written as strings.
_JSON_SAFE_INT = 1 << 53


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


from dpspark.mechanisms.compact.section import CompactInfo  # noqa: E402  (re-exported: readers import it from here)

#: the parsed statements are the shared types of :mod:`dpspark.privacy` (one definition for writer and reader)
RelationPrivacy = PrivacyStatement
AccuracyInfo = AccuracyStatement


@dataclass(frozen=True)
class ManifestHeader:
    """The parts every manifest has, whatever its envelope. ``raw`` is the JSON object as read."""

    raw: dict[str, Any] = field(repr=False)
    schema_version: int
    dpspark_version: str
    kind: str
    created_utc: str
    rng_name: str
    rng_test_only: bool
    max_units: int


@dataclass(frozen=True)
class Manifest(ManifestHeader):
    """A parsed, validated histogram manifest (kinds sparse and compact)."""

    algorithm: str
    counting: str
    epsilon_requested: Fraction | None
    delta_requested: Fraction
    exp_epsilon_tilde: Fraction
    theorem: str
    privacy_notes: str
    add_remove: PrivacyStatement
    replacement: PrivacyStatement
    accuracy: AccuracyStatement
    universe_spec: dict[str, Any]
    universe_size: int
    index_width: int
    key_columns: tuple[str, ...]
    input: dict[str, Any]
    config: dict[str, Any]
    bins: dict[str, Any] | None
    files: dict[str, FileEntry]
    compact: CompactInfo | None = None
    #: every count lies in [0, count_range]: max_units x max_keys_per_unit x max_rows_per_key (config)
    count_range: int = 0


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


def _exp_eps_float(exp_eps: Fraction) -> float | None:
    if exp_eps <= 0:
        return None
    return math.log(exp_eps.numerator) - math.log(exp_eps.denominator)  # report


#: algorithms whose replacement delta equals their add/remove delta (proof in dpspark.mechanisms.histogram.stability)
REPLACEMENT_DELTA_EQUALS_DELTA = ("StabilityHistogram",)


def relation_statements(
    exp_eps: Fraction,
    bias: Fraction,
    delta: Fraction,
    relation: str,
    theorem: str,
    replacement_delta: Fraction | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Manifest entries for add/remove (as stated) and replacement (two add/remove steps).

    Replacement by group privacy over two steps: eps' = 2 eps and delta' = (1 + e^eps) delta.
    e^eps = (p/q) e^b is irrational, so delta' is stated as the exact rational upper bound
    (1 + (p/q)/(1 - b)) delta, using e^b <= 1/(1 - b) for 0 <= b < 1.
    ``replacement_delta`` replaces that delta' by a bound the algorithm proves itself
    (only ``delta`` itself is accepted: StabilityHistogram's two changed bins are
    independent coordinates, see :mod:`dpspark.mechanisms.histogram.stability`).
    """
    if replacement_delta is not None and replacement_delta != delta:
        raise ValueError("a proved replacement delta must equal the add/remove delta (the only proved case)")
    if bias < 0 or bias >= 1:
        raise ValueError("bias_epsilon must lie in [0, 1)")
    if exp_eps < 1:
        raise ValueError("exp_eps must be >= 1")
    base = _exp_eps_float(exp_eps)
    add_remove = {
        "relation": relation,
        "exp_epsilon_tilde": frac_to_str(exp_eps),
        "bias_epsilon": frac_to_str(bias),
        "epsilon": f"ln({frac_to_str(exp_eps)}) + {frac_to_str(bias)}",
        "epsilon_float": None if base is None else base + float(bias),  # report
        "delta": frac_to_str(delta),
        "delta_log2": frac_log2(delta),
        "pure": delta == 0,
        "derivation": f"as stated by {theorem}"[:2000],
    }
    exp2, bias2 = exp_eps * exp_eps, 2 * bias
    delta2 = (1 + exp_eps / (1 - bias)) * delta if replacement_delta is None else replacement_delta
    derivation = (
        "eps' = 2 eps; delta' = (1 + e^eps) delta <= (1 + (p/q)/(1 - b)) delta, since e^b <= 1/(1 - b)"
        if replacement_delta is None
        else "eps' = 2 eps; delta' = delta: the two changed bins are independent, each (eps, delta) with its "
        "count-0 side deterministic, and the hockey-stick divergence at e^(2 eps) of such a pair is at most "
        "delta (derivation in dpspark.histogram.stability)"
    )
    replacement = {
        "relation": "replace one unit (two add/remove steps; group privacy)",
        "exp_epsilon_tilde": frac_to_str(exp2),
        "bias_epsilon": frac_to_str(bias2),
        "epsilon": f"ln({frac_to_str(exp2)}) + {frac_to_str(bias2)}",
        "epsilon_float": None if base is None else 2 * (base + float(bias)),  # report
        "delta": frac_to_str(delta2),
        "delta_log2": frac_log2(delta2),
        "pure": delta2 == 0,
        "derivation": derivation,
    }
    return add_remove, replacement


def manifest_header(kind: str, rng_name: str, created_utc: str | None, max_units: int) -> dict[str, Any]:
    """The fields every manifest starts with (format, versions, kind, time, generator, n)."""
    from dpspark import __version__

    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "dpspark_version": __version__,
        "kind": kind,
        "created_utc": created_utc or utc_now(),
        "rng": {"name": rng_name, "test_only": "TEST ONLY" in rng_name.upper()},
        "max_units": int_to_str(max_units),
    }


def utc_now() -> str:
    """The creation time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def seal_manifest(manifest: Mapping[str, Any]) -> bytes:
    """The manifest's bytes with ``manifest_sha256`` filled in (any existing value is replaced).

    Deterministic: sorted keys, two-space indent, ASCII only, no NaN.
    """
    body = dict(manifest)
    body["manifest_sha256"] = _PLACEHOLDER
    text = json.dumps(body, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
    data = text.encode("ascii")
    digest = hashlib.sha256(data).hexdigest()
    marker = f'"manifest_sha256": "{_PLACEHOLDER}"'.encode()
    if data.count(marker) != 1:  # a free-form field contained the marker text itself
        raise ValueError("manifest fields may not contain the manifest_sha256 marker")
    return data.replace(marker, f'"manifest_sha256": "{digest}"'.encode())


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def _fail(name: str, message: str) -> ReleaseFormatError:
    return ReleaseFormatError(f"{name}: {message}")


def read_regular_file(path: Path, limit: int, what: str) -> bytes:
    """Bytes of a regular file no larger than ``limit`` (never opens FIFOs or devices, so never hangs)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _fail(str(path), f"{what} is missing") from None
    except OSError as exc:
        raise _fail(str(path), f"cannot stat {what}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _fail(str(path), f"{what} is not a regular file")
    if st.st_size > limit:
        raise _fail(str(path), f"{what} is {st.st_size} bytes, above the limit of {limit} bytes")
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise _fail(str(path), f"cannot read {what}: {exc.strerror}") from None
    if len(data) > limit:
        raise _fail(str(path), f"{what} grew beyond the limit of {limit} bytes while being read")
    return data


def read_manifest(release_dir: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> Manifest:
    """Read and validate ``<release_dir>/manifest.json``; raises :class:`ReleaseFormatError`."""
    path = Path(release_dir) / MANIFEST_NAME
    data = read_regular_file(path, limits.max_manifest_bytes, "the manifest")
    return parse_manifest(data, str(path), limits)


def parse_manifest(data: bytes, name: str = MANIFEST_NAME, limits: ReadLimits = DEFAULT_LIMITS) -> Manifest:
    """Validate manifest bytes; every failure is a :class:`ReleaseFormatError` naming ``name``."""
    try:
        return _parse(data, name, limits)
    except ReleaseFormatError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError, ZeroDivisionError) as exc:
        # A check below missed a case: still report it as a format error, never a bare exception.
        raise _fail(name, f"invalid manifest ({type(exc).__name__}: {str(exc)[:200]})") from None


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


def _parse(data: bytes, name: str, limits: ReadLimits) -> Manifest:
    if len(data) > limits.max_manifest_bytes:
        raise _fail(name, f"manifest is {len(data)} bytes, above the limit of {limits.max_manifest_bytes}")
    if not data:
        raise _fail(name, "manifest is empty (truncated?)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(name, f"manifest is not valid UTF-8 (byte {exc.start}); the file is damaged") from None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise _fail(name, "manifest is nested too deeply") from None
    except ValueError as exc:
        raise _fail(name, f"manifest is not valid JSON ({str(exc)[:160]}); truncated or damaged?") from None
    if not isinstance(obj, dict):
        raise _fail(name, "manifest must be a JSON object")
    if not _depth_ok(obj):
        raise _fail(name, f"manifest is nested deeper than {MAX_DEPTH} levels")
    if obj.get("format") != FORMAT:
        raise _fail(name, f"not a dpspark release manifest (format must be {FORMAT!r})")
    version = obj.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        shown = json.dumps(version)[:40]
        raise _fail(name, f"manifest schema version {shown} is not supported (this dpspark reads version {SCHEMA_VERSION})")
    _check_checksum(data, name)
    if "envelope" in obj:  # answers, samples, learned distributions: the general statement envelope
        if obj["envelope"] != "statement":
            raise _fail(name, f"unknown manifest envelope {json.dumps(obj['envelope'])[:40]}")
        from dpspark.release.statement_envelope import parse_statement_manifest

        return parse_statement_manifest(obj, name, limits)  # type: ignore[return-value]
    try:
        validate(obj, manifest_schema())
    except SchemaViolation as exc:
        raise _fail(name, f"manifest does not match the schema: {exc}") from None
    return _semantic(obj, name, limits)


def _check_checksum(data: bytes, name: str) -> None:
    found = _CHECKSUM_FIELD.findall(data)
    if len(found) != 1:
        raise _fail(name, "manifest has no single well-formed manifest_sha256 field; the file is damaged")
    claimed = found[0].decode()
    actual = hashlib.sha256(_CHECKSUM_FIELD.sub(f'"manifest_sha256": "{_PLACEHOLDER}"'.encode(), data)).hexdigest()
    if actual != claimed:
        raise _fail(name, "manifest checksum mismatch: the file was modified or damaged after it was written")


def _int(text: str, name: str, where: str, max_bits: int) -> int:
    try:
        return str_to_int(text, max_bits)
    except ValueError as exc:
        raise _fail(name, f"{where}: {exc}") from None


def _frac(text: str, name: str, where: str, max_bits: int = 4096) -> Fraction:
    try:
        return str_to_frac(text, max_bits)
    except ValueError as exc:
        raise _fail(name, f"{where}: {exc}") from None


def _relation(obj: dict[str, Any], name: str, where: str, delta_bits: int, relation: Any, bias_bits: int = 4096) -> PrivacyStatement:
    exp = _frac(obj["exp_epsilon_tilde"], name, f"{where}.exp_epsilon_tilde")
    bias = _frac(obj["bias_epsilon"], name, f"{where}.bias_epsilon", bias_bits)
    delta = _frac(obj["delta"], name, f"{where}.delta", delta_bits)
    if exp < 1 or not 0 <= bias < 1 or not 0 <= delta <= 1:
        raise _fail(name, f"{where}: privacy parameters out of range (need e^eps >= 1, 0 <= bias < 1, 0 <= delta <= 1)")
    if obj["pure"] != (delta == 0):
        raise _fail(name, f"{where}: 'pure' contradicts delta")
    derivation = obj["derivation"]
    theorem = derivation[len("as stated by "):] if derivation.startswith("as stated by ") else derivation
    return PrivacyStatement.from_exp_eps(exp, bias, delta, theorem, relation)


def _semantic(obj: dict[str, Any], name: str, limits: ReadLimits) -> Manifest:
    rng = obj["rng"]
    if rng["test_only"] != ("TEST ONLY" in rng["name"].upper()):
        raise _fail(name, "rng.test_only contradicts the generator's name")
    mech = obj["mechanism"]
    eps_req = None if mech["epsilon"] is None else _frac(mech["epsilon"], name, "mechanism.epsilon")
    delta_req = _frac(mech["delta"], name, "mechanism.delta", limits.max_delta_bits)
    exp_eps = _frac(mech["epsilon_tilde"]["exp"], name, "mechanism.epsilon_tilde.exp")
    privacy = obj["privacy"]
    # a compact release's bias holds the sampler's exact bound, whose denominator grows with d
    bias_bits = 4 * limits.max_sampler_d_bits if obj["kind"] == "compact" else 4096
    max_units = _int(obj["max_units"], name, "max_units", 256)
    if max_units < 1:
        raise _fail(name, "max_units must be >= 1")
    add_remove = _relation(privacy["add_remove"], name, "privacy.add_remove", limits.max_delta_bits,
                           AddRemove(max_units), bias_bits)
    replacement = _relation(privacy["replacement"], name, "privacy.replacement", limits.max_delta_bits + 4200,
                            Substitute(max_units), bias_bits + 8)
    if add_remove.exp_eps != exp_eps:
        raise _fail(name, "privacy.add_remove.exp_epsilon_tilde differs from mechanism.epsilon_tilde.exp")
    if (
        replacement.exp_eps != exp_eps * exp_eps
        or replacement.bias_epsilon != 2 * add_remove.bias_epsilon
        or (
            replacement.delta != (1 + exp_eps / (1 - add_remove.bias_epsilon)) * add_remove.delta
            and not (mech["algorithm"] in REPLACEMENT_DELTA_EQUALS_DELTA and replacement.delta == add_remove.delta)
        )
    ):
        raise _fail(name, "privacy.replacement is not the two-step group-privacy statement of privacy.add_remove")
    acc = obj["accuracy"]
    above = _int(acc["per_query"]["holds_for_true_counts_above"], name, "accuracy.per_query.holds_for_true_counts_above", 256)
    betas = (_frac(acc["per_query"]["beta"], name, "accuracy.per_query.beta"),
             _frac(acc["simultaneous"]["beta"], name, "accuracy.simultaneous.beta"))
    if _int(acc["threshold"], name, "accuracy.threshold", 256) != above:
        raise _fail(name, "accuracy.threshold differs from accuracy.per_query.holds_for_true_counts_above")
    for beta in betas:
        if not 0 <= beta <= 1:
            raise _fail(name, "accuracy: beta must lie in [0, 1]")
    if above < -1:
        raise _fail(name, "accuracy.threshold must be >= -1")
    a_pq = _int(acc["per_query"]["a"], name, "accuracy.per_query.a", 256)
    a_sim = _int(acc["simultaneous"]["a"], name, "accuracy.simultaneous.a", 256)
    if a_pq < 0 or a_sim < 0:
        raise _fail(name, "accuracy: error bars must be >= 0")
    accuracy = AccuracyStatement.histogram(a_pq, betas[0], above, a_sim, betas[1], acc["notes"])
    universe_size = _int(obj["universe_size"], name, "universe_size", 257)
    if universe_size > 1 << 256:
        raise _fail(name, "universe_size is above 2^256")
    if obj["index_width"] != (16 if universe_size <= 1 << 128 else 32):
        raise _fail(name, "index_width does not match universe_size")
    files: dict[str, FileEntry] = {}
    if len(obj["files"]) > limits.max_files:
        raise _fail(name, f"manifest lists more than {limits.max_files} files")
    for fname, entry in obj["files"].items():
        size = _int(entry["bytes"], name, f"files.{fname}.bytes", 128)
        if size > limits.max_file_bytes:
            raise _fail(name, f"files.{fname} declares {size} bytes, above the limit of {limits.max_file_bytes} bytes")
        files[fname] = FileEntry(entry["sha256"], size)
    if MANIFEST_NAME in files:
        raise _fail(name, "the manifest cannot list itself as a data file")
    kind = obj["kind"]
    recorded_n = obj["config"].get("max_units") if isinstance(obj["config"], dict) else None
    if recorded_n is not None and (isinstance(recorded_n, bool) or str(recorded_n) != str(max_units)):
        raise _fail(name, f"config.max_units differs from max_units = {max_units} (the manifest's statements "
                          "do not re-derive)")
    keys_per_unit = _bound(obj["config"], "max_keys_per_unit", name)
    rows_per_key = _bound(obj["config"], "max_rows_per_key", name)
    from dpspark.release.sections import SectionContext, parse_section

    section = parse_section(kind, obj, files, name, limits, SectionContext(
        max_units=max_units, universe_size=universe_size, add_remove=add_remove, accuracy=accuracy,
        keys_per_unit=keys_per_unit))
    columns = obj["key_columns"]
    if len(set(columns)) != len(columns):
        raise _fail(name, "key_columns has duplicates")
    return Manifest(
        raw=obj,
        schema_version=obj["schema_version"],
        dpspark_version=obj["dpspark_version"],
        kind=kind,
        created_utc=obj["created_utc"],
        rng_name=rng["name"],
        rng_test_only=rng["test_only"],
        max_units=max_units,
        algorithm=mech["algorithm"],
        counting=mech["counting"],
        epsilon_requested=eps_req,
        delta_requested=delta_req,
        exp_epsilon_tilde=exp_eps,
        theorem=privacy["theorem"],
        privacy_notes=privacy["notes"],
        add_remove=add_remove,
        replacement=replacement,
        accuracy=accuracy,
        universe_spec=obj["universe"],
        universe_size=universe_size,
        index_width=obj["index_width"],
        key_columns=tuple(columns),
        input=obj["input"],
        config=obj["config"],
        bins=section.get("bins"),
        files=files,
        compact=section.get("compact"),
        count_range=max_units * keys_per_unit * rows_per_key,
    )


def _bound(config: Any, key: str, name: str) -> int:
    """A contribution bound recorded in the config section (1 when absent: releases before the engine port)."""
    value = config.get(key, 1) if isinstance(config, dict) else 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise _fail(name, f"config.{key} must be an integer in [1, 1000000]")
    return value
