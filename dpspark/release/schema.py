"""A small JSON Schema validator for the subset the manifest schema uses.

``jsonschema`` is not a dependency of dpspark, so this module implements the
keywords that ``manifest.schema.json`` uses (draft 2020-12 meaning): ``type``,
``enum``, ``const``, ``properties``, ``required``, ``additionalProperties``,
``propertyNames``, ``maxProperties``, ``items``, ``minItems``, ``maxItems``,
``pattern``, ``minLength``, ``maxLength``, ``minimum``, ``maximum``, ``allOf``,
``if``/``then`` and local ``$ref`` (``#/$defs/name``). Any other keyword in a
schema is an error, so the schema cannot silently use something unchecked.

Recursion follows the schema, never the instance (objects the schema leaves
open are not descended into), so a deeply nested manifest cannot exhaust the
stack here. Patterns written ``^...$`` are matched with ``re.fullmatch`` (so a
trailing newline never slips through Python's ``$``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from dpspark.errors import DPSparkError

_KNOWN = {
    "$schema", "$id", "$defs", "$comment", "title", "description",
    "type", "enum", "const", "properties", "required", "additionalProperties", "propertyNames",
    "maxProperties", "items", "minItems", "maxItems", "pattern", "minLength", "maxLength",
    "minimum", "maximum", "allOf", "if", "then", "$ref",
}
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class SchemaViolation(DPSparkError, ValueError):
    """An instance does not satisfy the schema; ``path`` locates the offending value."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '(top level)'}: {message}")
        self.path = path


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern.startswith("^") and pattern.endswith("$"):
        pattern = pattern[1:-1]
        return re.compile(rf"(?:{pattern})\Z")
    return re.compile(pattern)


def _matches(pattern: str, text: str) -> bool:
    compiled = _compiled(pattern)
    if pattern.startswith("^") and pattern.endswith("$"):
        return compiled.match(text) is not None
    return compiled.search(text) is not None


def _type_name(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def validate(instance: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, path: str = "") -> None:
    """Raise :class:`SchemaViolation` if ``instance`` does not satisfy ``schema``."""
    root = schema if root is None else root
    unknown = set(schema) - _KNOWN
    if unknown:
        raise TypeError(f"schema uses unsupported keyword(s): {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise TypeError(f"unsupported $ref {ref!r}")
        validate(instance, root["$defs"][ref[len("#/$defs/"):]], root, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](instance) for t in types):
            raise SchemaViolation(path, f"expected {' or '.join(types)}, found {_type_name(instance)}")
    if "const" in schema and not _json_equal(instance, schema["const"]):
        raise SchemaViolation(path, f"must be {json.dumps(schema['const'])}")
    if "enum" in schema and not any(_json_equal(instance, e) for e in schema["enum"]):
        raise SchemaViolation(path, f"must be one of {json.dumps(schema['enum'])}")
    if isinstance(instance, str):
        _check_string(instance, schema, path)
    if _TYPES["number"](instance):
        if "minimum" in schema and instance < schema["minimum"]:
            raise SchemaViolation(path, f"must be >= {schema['minimum']}")
        if "maximum" in schema and instance > schema["maximum"]:
            raise SchemaViolation(path, f"must be <= {schema['maximum']}")
    if isinstance(instance, list):
        _check_array(instance, schema, root, path)
    if isinstance(instance, dict):
        _check_object(instance, schema, root, path)
    for sub in schema.get("allOf", ()):
        validate(instance, sub, root, path)
    if "if" in schema:
        try:
            validate(instance, schema["if"], root, path)
            matched = True
        except SchemaViolation:
            matched = False
        if matched and "then" in schema:
            validate(instance, schema["then"], root, path)


def _json_equal(a: Any, b: Any) -> bool:
    # JSON equality: True is not 1, and 1 equals 1.0
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _check_string(text: str, schema: dict[str, Any], path: str) -> None:
    if "minLength" in schema and len(text) < schema["minLength"]:
        raise SchemaViolation(path, f"string shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(text) > schema["maxLength"]:
        raise SchemaViolation(path, f"string longer than {schema['maxLength']} characters")
    if "pattern" in schema and not _matches(schema["pattern"], text):
        raise SchemaViolation(path, "string does not have the required form")


def _check_array(items: list[Any], schema: dict[str, Any], root: dict[str, Any], path: str) -> None:
    if "minItems" in schema and len(items) < schema["minItems"]:
        raise SchemaViolation(path, f"needs at least {schema['minItems']} items")
    if "maxItems" in schema and len(items) > schema["maxItems"]:
        raise SchemaViolation(path, f"has more than {schema['maxItems']} items")
    if "items" in schema:
        for i, item in enumerate(items):
            validate(item, schema["items"], root, f"{path}[{i}]")


def _check_object(obj: dict[str, Any], schema: dict[str, Any], root: dict[str, Any], path: str) -> None:
    if "maxProperties" in schema and len(obj) > schema["maxProperties"]:
        raise SchemaViolation(path, f"has more than {schema['maxProperties']} entries")
    for name in schema.get("required", ()):
        if name not in obj:
            raise SchemaViolation(path, f"missing required field {name!r}")
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, value in obj.items():
        sub_path = f"{path}.{key}" if path else key
        if "propertyNames" in schema:
            validate(key, schema["propertyNames"], root, f"{sub_path} (name)")
        if key in props:
            validate(value, props[key], root, sub_path)
        elif extra is False:
            raise SchemaViolation(path, f"unknown field {key[:80]!r}")
        elif isinstance(extra, dict):
            validate(value, extra, root, sub_path)


@lru_cache(maxsize=1)
def manifest_schema() -> dict[str, Any]:
    """The manifest JSON Schema shipped beside this module."""
    return json.loads((Path(__file__).with_name("manifest.schema.json")).read_text(encoding="utf-8"))
