"""Keys typed as text (``dpspark lookup KEY``) or as JSON (``--key-json``), read by a universe's key kind.

The syntax, by key kind (:attr:`dpspark.universe.Universe.key_kind`):

* ``int``: a decimal integer (surrounding spaces allowed);
* ``string``: the text as given;
* ``bytes``: the UTF-8 bytes of the text; in JSON also ``{"hex": "00ff"}``;
* a tuple: components separated by commas, ``\\,`` for a comma inside a component and ``\\\\`` for a
  backslash (:func:`split_tuple_key`); in JSON a list.

Errors are :class:`~dpspark.errors.ParameterError` and never quote the key.
"""

from __future__ import annotations

from typing import Any

from dpspark.errors import ParameterError


def split_tuple_key(text: str) -> list[str]:
    """Split ``a,b\\,c`` into ``["a", "b,c"]`` (``\\,`` is a comma, ``\\\\`` a backslash)."""
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text) or text[i + 1] not in ",\\":
                raise ParameterError("in a tuple key, a backslash must be followed by ',' or '\\'")
            cur.append(text[i + 1])
            i += 2
            continue
        if ch == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def int_text(text: str, what: str) -> int:
    """A decimal integer; ``what`` names the key (or component) in the error."""
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise ParameterError(f"{what}: expected a decimal integer") from None


def scalar_from_text(key_kind: str, text: str, what: str) -> Any:
    """A scalar key of ``key_kind`` ("int", "string" or "bytes") from its text."""
    if key_kind == "int":
        return int_text(text, what)
    return text.encode("utf-8") if key_kind == "bytes" else text


def scalar_from_json(key_kind: str, value: Any, what: str) -> Any:
    """A scalar key of ``key_kind`` from a decoded JSON value (``{"hex": ...}`` is bytes for any kind)."""
    if isinstance(value, dict):
        if set(value) != {"hex"} or not isinstance(value["hex"], str):
            raise ParameterError(f'{what}: a JSON object key must be {{"hex": "..."}}')
        try:
            return bytes.fromhex(value["hex"])
        except ValueError:
            raise ParameterError(f"{what}: invalid hex") from None
    if key_kind == "bytes" and isinstance(value, str):
        return value.encode("utf-8")
    return value
