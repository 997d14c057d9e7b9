"""Data files of a release: checksums, the size/sha256 checks of the hardened readers, the universe's value lists.

What every release kind has; every failure is a :class:`ReleaseFormatError` naming the file. Sizes are
checked against the manifest before anything is read; checksums are verified once, when ``verify`` is set.
A kind's own data files are read by its codec (``mechanisms/<family>/files.py``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any, Callable, Optional

from dpspark.release.errors import ReleaseFormatError
from dpspark.release.header import FileEntry
from dpspark.universe import Universe, UniverseConfigError, universe_from_dict

_CHUNK = 1 << 20


def sha256_file(path: Path, limit: int | None = None) -> str:
    """Hex sha256 of a file, streamed (reads at most ``limit + 1`` bytes when given)."""
    h = hashlib.sha256()
    left = None if limit is None else limit + 1
    with open(path, "rb") as fh:
        while left is None or left > 0:
            chunk = fh.read(_CHUNK if left is None else min(_CHUNK, left))
            if not chunk:
                break
            h.update(chunk)
            if left is not None:
                left -= len(chunk)
    return h.hexdigest()


def file_entry(path: Path) -> FileEntry:
    """The manifest entry (sha256, byte size) of a written file."""
    return FileEntry(sha256_file(path), path.stat().st_size)


def check_data_file(release_dir: Path, name: str, entry: FileEntry, verify: bool) -> Path:
    """Check one listed data file: a regular file of the declared size and, if ``verify``, checksum.

    The size is compared before anything is read, so a wrong or absurd size never
    leads to a large read; the checksum is streamed.
    """
    path = release_dir / name
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ReleaseFormatError(f"{path}: data file listed in the manifest is missing") from None
    except OSError as exc:
        raise ReleaseFormatError(f"{path}: cannot stat data file ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ReleaseFormatError(f"{path}: data file is not a regular file")
    if st.st_size != entry.size:
        raise ReleaseFormatError(
            f"{path}: data file is {st.st_size} bytes but the manifest says {entry.size} "
            f"({'truncated' if st.st_size < entry.size else 'extra bytes'}; the release is damaged)"
        )
    if verify:
        try:
            actual = sha256_file(path, entry.size)
        except OSError as exc:
            raise ReleaseFormatError(f"{path}: cannot read data file ({exc.strerror})") from None
        if actual != entry.sha256:
            raise ReleaseFormatError(f"{path}: sha256 mismatch: the data file was modified or damaged")
    return path


def verify_files(manifest: Any, release_dir: Path, verify: bool) -> None:
    """Size-check (and with ``verify`` checksum) every data file listed in the manifest."""
    for name, entry in manifest.files.items():
        check_data_file(release_dir, name, entry, verify)


def _categorical_files(spec: Any) -> list[Any]:
    """The ``file`` fields of categorical (component) specs, whatever shape the spec has."""
    comps = spec.get("components") if isinstance(spec, dict) and spec.get("kind") == "tuple" else [spec]
    if not isinstance(comps, list):
        return []  # universe_from_dict rejects it
    return [c["file"] for c in comps if isinstance(c, dict) and c.get("kind") == "categorical" and "file" in c]


def load_universe_spec(spec: Any, files: Any, release_dir: Path) -> Universe:
    """A universe spec of a release's manifest (value lists must be listed data files, already size-checked)."""
    name = str(release_dir / "manifest.json")
    for f in _categorical_files(spec):
        if not isinstance(f, str) or f not in files:
            raise ReleaseFormatError(f"{name}: the universe's value list file is not a listed data file of the release")
    try:
        return universe_from_dict(spec, base_dir=release_dir)
    except (UniverseConfigError, ValueError, TypeError, KeyError, AttributeError, RecursionError, OSError,
            UnicodeDecodeError, OverflowError) as exc:
        raise ReleaseFormatError(f"{name}: invalid universe spec ({str(exc)[:300]})") from None


def load_universe(manifest: Any, release_dir: Path,
                  fits: Optional[Callable[[Universe, list[str]], Any]] = None) -> Universe:
    """The release's universe (value lists must be listed data files, already size-checked).

    ``fits(universe, key_columns)``: the kind's layout check of the key columns (``ValueError`` if they do
    not fit the universe).
    """
    name = str(release_dir / "manifest.json")
    universe = load_universe_spec(manifest.universe_spec, manifest.files, release_dir)
    if universe.size != manifest.universe_size:
        raise ReleaseFormatError(f"{name}: universe_size differs from the size of the universe spec")
    if fits is not None:
        try:
            fits(universe, list(manifest.key_columns))
        except ValueError as exc:
            raise ReleaseFormatError(f"{name}: key_columns do not fit the universe ({exc})") from None
    return universe
