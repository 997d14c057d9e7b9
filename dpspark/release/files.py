"""Data files of a release: checksums and the size/sha256 checks of the hardened readers."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from dpspark.release.errors import ReleaseFormatError
from dpspark.release.manifest import FileEntry

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
