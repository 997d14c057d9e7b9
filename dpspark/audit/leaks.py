"""Leak scan: no secret value (true count, raw key) may appear in manifests, logs or error messages.

Each secret is searched for in the forms a careless program would write it:

* int: decimal (also zero-padded, negative), hexadecimal with or without
  ``0x`` and zero padding (e.g. a 16-byte big-endian index as 32 hex digits),
  either case;
* str: the raw text, its JSON-escaped form, and the hex of its UTF-8 bytes;
* bytes: the raw bytes (blobs given as bytes are searched byte for byte), hex
  in either case, base64, and the UTF-8 text when decodable.

Numbers match only as whole tokens (no digit, or hex digit for hex forms, on
either side), so 123 does not match inside 41234. Choose distinctive secrets:
a true count of 3 collides with any public "3" (n, a version, a date) and
will be reported as a (possible) leak, which is the safe direction.

Scan manifests, logs and error messages, not the released values: a noisy
count equals the true count with substantial probability, by design.
"""

from __future__ import annotations

import base64
import json
import re
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

Secret = int | str | bytes

#: unprefixed hex forms shorter than this are not searched (too many accidental words like "a", "be")
MIN_BARE_HEX_DIGITS = 4


@dataclass(frozen=True)
class Leak:
    """Where a secret was found; ``secret_index`` refers to the caller's list (the value is not repeated)."""

    blob: str
    secret_index: int
    form: str
    position: int

    def describe(self) -> str:
        """A message that locates the leak without reprinting the secret."""
        return f"secret #{self.secret_index} appears in {self.blob!r} at offset {self.position} ({self.form})"


def _int_patterns(value: int) -> list[tuple[str, re.Pattern[str]]]:
    sign = "-" if value < 0 else ""
    mag = abs(value)
    dec = str(mag)
    hx = format(mag, "x")
    pats = [("decimal", re.compile(rf"(?<![0-9.]){re.escape(sign)}0*{dec}(?![0-9])"))]
    prefixed = re.compile(rf"(?<![0-9A-Za-z]){re.escape(sign)}0[xX]0*{hx}(?![0-9a-fA-F])", re.IGNORECASE)
    pats.append(("hex (0x)", prefixed))
    if len(hx) >= MIN_BARE_HEX_DIGITS:
        pats.append(("hex", re.compile(rf"(?<![0-9a-fA-F]){re.escape(sign)}0*{hx}(?![0-9a-fA-F])", re.IGNORECASE)))
    return pats


def _text_patterns(value: str) -> list[tuple[str, re.Pattern[str]]]:
    pats = [("raw", re.compile(re.escape(value)))]
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    if escaped != value:
        pats.append(("json-escaped", re.compile(re.escape(escaped))))
    ascii_escaped = json.dumps(value, ensure_ascii=True)[1:-1]
    if ascii_escaped not in (value, escaped):
        pats.append(("json-ascii-escaped", re.compile(re.escape(ascii_escaped))))
    hx = value.encode("utf-8").hex()
    if len(hx) >= MIN_BARE_HEX_DIGITS:
        pats.append(("utf-8 hex", re.compile(re.escape(hx), re.IGNORECASE)))
    return pats


def _bytes_patterns(value: bytes) -> list[tuple[str, re.Pattern[str]]]:
    pats = [("raw bytes", re.compile(re.escape(value.decode("latin-1"))))]
    hx = value.hex()
    if len(hx) >= MIN_BARE_HEX_DIGITS:
        pats.append(("hex", re.compile(re.escape(hx), re.IGNORECASE)))
    b64 = base64.b64encode(value).decode("ascii").rstrip("=")
    if len(b64) >= 4:
        pats.append(("base64", re.compile(re.escape(b64))))
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if text and text != value.decode("latin-1"):
            pats.append(("utf-8 text", re.compile(re.escape(text))))
    return pats


def secret_patterns(secret: Secret) -> list[tuple[str, re.Pattern[str]]]:
    """(form name, compiled pattern) for every written form of ``secret`` searched by :func:`find_leaks`."""
    if isinstance(secret, bool):
        raise TypeError("a secret must be an int, str or bytes, not bool")
    if isinstance(secret, int):
        return _int_patterns(secret)
    if isinstance(secret, str):
        if not secret:
            raise ValueError("an empty string cannot be scanned for")
        return _text_patterns(secret)
    if isinstance(secret, (bytes, bytearray)):
        if not secret:
            raise ValueError("empty bytes cannot be scanned for")
        return _bytes_patterns(bytes(secret))
    raise TypeError(f"a secret must be an int, str or bytes, got {type(secret).__name__}")


def _as_text(blob: str | bytes) -> str:
    # latin-1 maps each byte to one code point, so raw-byte secrets are found byte for byte
    return blob.decode("latin-1") if isinstance(blob, (bytes, bytearray)) else blob


def find_leaks(blobs: Mapping[str, str | bytes] | Iterable[str | bytes], secrets: Iterable[Secret]) -> list[Leak]:
    """Every occurrence (first per blob, secret and form) of a secret in the blobs.

    ``blobs`` is {name: text or bytes} (e.g. {"manifest.json": ..., "stderr": ...}) or a
    sequence (named by position). UTF-8 text given as bytes is also searched decoded.
    """
    named = dict(blobs) if isinstance(blobs, Mapping) else {f"blob[{i}]": b for i, b in enumerate(blobs)}
    patterns = [(i, secret_patterns(s)) for i, s in enumerate(secrets)]
    leaks: list[Leak] = []
    for name, blob in named.items():
        texts = [_as_text(blob)]
        if isinstance(blob, (bytes, bytearray)):
            try:
                texts.append(bytes(blob).decode("utf-8"))
            except UnicodeDecodeError:
                pass
        for index, pats in patterns:
            for form, pat in pats:
                for text in texts:
                    m = pat.search(text)
                    if m is not None:
                        leaks.append(Leak(name, index, form, m.start()))
                        break
    return leaks


def assert_no_leaks(blobs: Mapping[str, str | bytes] | Iterable[str | bytes], secrets: Iterable[Secret]) -> None:
    """Raise AssertionError locating every leak (without reprinting any secret) if one is found."""
    leaks = find_leaks(blobs, secrets)
    if leaks:
        raise AssertionError("secret values leaked:\n" + "\n".join("  " + leak.describe() for leak in leaks))


def blobs_from_paths(paths: Iterable[str | os.PathLike[str]], *, max_bytes: int = 64 << 20) -> dict[str, bytes]:
    """{path: bytes} for the given files, and for every file under the given directories (recursive).

    Files larger than ``max_bytes`` are refused (a ValueError naming the file) rather than skipped silently.
    """
    out: dict[str, bytes] = {}
    for raw in paths:
        root = Path(raw)
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for f in files:
            size = f.stat().st_size
            if size > max_bytes:
                raise ValueError(f"{f} is {size} bytes, more than max_bytes = {max_bytes}; scan it separately")
            out[str(f)] = f.read_bytes()
    return out
