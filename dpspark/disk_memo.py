"""A small on-disk memo of certified calibrations, keyed by their exact public parameters.

A bounded-noise calibration (:func:`dpspark.noise.bounded_calibrate.calibrate`) or a zCDP rho search
(:func:`dpspark.mechanisms.zcdp_budget.rho_within`) is a pure function of public parameters and of the code
that certifies it, and costs 0.1-10 s of CPU in a cold process: most of a cold CLI's "checking" time
(issue 35 §1). So are a certified bound on e^eps (:meth:`dpspark.privacy.LogEpsilon.exp_upper`, which
imports python-flint: 0.1-0.2 s of a read command's start) and a groups release's budget split. This module
sits outside the layers (as :mod:`dpspark.exact` does) so the privacy layer can use it too;
:mod:`dpspark.noise.calibration_cache` was its former name.

This module stores each *certified* result (the function returned; a refusal is never stored)
in one JSON file under the user's cache directory, so the next process reads it in a millisecond.

* **Key**: the sha256 of the function's name, its exact parameters (ints, strings, Fractions as strings) and
  the sha256 of the certifying modules' source files (:func:`code_digest`), so an edited certifier never
  reads an older result. Nothing about any data enters a key or an entry.
* **Entry**: ``{"key": ..., "value": ..., "check": sha256(key + value)}``. An entry that does not parse,
  whose check or key does not match, or that its decoder refuses is *named and ignored*: one warning with
  its path, then the value is computed again and the entry rewritten.
* **Trust**: the directory is created with mode 0700; an entry or directory writable by others, or owned
  by another user, is ignored (named) since whoever can write it chooses the noise scale.
* **Where**: ``$DPSPARK_CACHE_DIR/calibrations`` if set, else ``$XDG_CACHE_HOME/dpspark/calibrations``,
  else ``~/.cache/dpspark/calibrations``. ``DPSPARK_CACHE_DIR=off`` disables it. A cache that cannot be
  written (a read-only home) only costs the computation.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: bumped when the entry layout changes
LAYOUT = 1

_DIGESTS: dict[tuple[str, ...], str] = {}


class CorruptCacheEntry(UserWarning):
    """A calibration cache entry was unreadable or untrusted; it was ignored (its path is in the message)."""


def cache_dir() -> Path | None:
    """The calibration cache directory (module docstring), or None when disabled."""
    root = os.environ.get("DPSPARK_CACHE_DIR")
    if root is not None:
        if root.strip().lower() in ("", "0", "off", "no", "false"):
            return None
        return Path(root) / "calibrations"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "dpspark" / "calibrations"


def code_digest(modules: Sequence[str]) -> str:
    """sha256 over the source files of ``modules`` (the certifier's own code; not imported here), memoised."""
    key = tuple(modules)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        for name in modules:
            spec = importlib.util.find_spec(name)  # the file, without running the module (gmpy2: 0.3 s)
            src = spec.origin if spec is not None and spec.has_location else None
            h.update(name.encode())
            h.update(Path(src).read_bytes() if src else b"?")
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def _key_text(name: str, params: Sequence[Any], modules: Sequence[str]) -> str:
    parts = [str(p) if not isinstance(p, (int, str)) or isinstance(p, bool) else p for p in params]
    return json.dumps({"layout": LAYOUT, "name": name, "params": parts, "code": code_digest(modules)},
                      sort_keys=True, separators=(",", ":"))


def _check(key: str, value: Any) -> str:
    return hashlib.sha256((key + "\0" + json.dumps(value, sort_keys=True, separators=(",", ":"))).encode()).hexdigest()


def _trusted(path: Path) -> str | None:
    """None when ``path`` is ours and not writable by others, else why not."""
    try:
        st = path.stat()
    except OSError as err:
        return f"cannot stat it ({err.strerror})"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return "it is owned by another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "it is writable by other users"
    return None


def _warn(path: Path, why: str) -> None:
    warnings.warn(f"dpspark: ignoring the calibration cache entry {path}: {why}; computing it again",
                  CorruptCacheEntry, stacklevel=3)


def _read(path: Path, key: str) -> Any:
    """The stored value, or None (absent, or named and ignored)."""
    if not path.exists():
        return None
    why = _trusted(path.parent) or _trusted(path)
    if why is None:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(entry, dict) or set(entry) != {"key", "value", "check"}:
                why = "not a cache entry"
            elif entry["key"] != key:
                why = "its key does not match its file name"
            elif entry["check"] != _check(key, entry["value"]):
                why = "its checksum does not match"
            else:
                return entry["value"]
        except (OSError, ValueError, UnicodeDecodeError) as err:
            why = f"unreadable ({type(err).__name__})"
    _warn(path, why)
    return None


def _write(folder: Path, path: Path, key: str, value: Any) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if _trusted(folder) is not None:
            return
        text = json.dumps({"key": key, "value": value, "check": _check(key, value)}, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)  # atomic: a reader sees the old entry or the whole new one
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return  # a read-only or full cache costs only the computation


def memoised(name: str, params: Sequence[Any], modules: Sequence[str], compute: Callable[[], T],
             encode: Callable[[T], Any], decode: Callable[[Any], T]) -> T:
    """``compute()``, or its certified result stored by an earlier process under the same key.

    ``params`` are the exact public parameters (ints, strings or Fractions); ``modules`` the modules whose
    source decides the result; ``encode`` turns a result into JSON (exact: integers and rational strings),
    ``decode`` back, raising ValueError/TypeError/KeyError on anything malformed (the entry is then named
    and ignored). ``compute`` raising (a refusal) stores nothing.
    """
    folder = cache_dir()
    if folder is None:
        return compute()
    key = _key_text(name, params, modules)
    path = folder / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
    stored = _read(path, key)
    if stored is not None:
        try:
            return decode(stored)
        except (ValueError, TypeError, KeyError, ZeroDivisionError) as err:
            _warn(path, f"its value is malformed ({type(err).__name__})")
    value = compute()
    _write(folder, path, key, encode(value))
    return value
