"""Atomic release directories: all files appear at the final path at once, or nothing does.

A release is written into a temporary directory ``.<name>.tmp-<pid>-<random>``
next to the output path (same filesystem), every file and the directory are
fsynced, and the directory is renamed to the final path, then the parent is
fsynced. A crash leaves at most such a temporary directory, never a partial
release at the final path. The next write to the same output path removes
leftover temporary directories whose writing process is gone (on this host)
and that hold only files a release writer makes; readers never look at them.

An existing path is never replaced: a complete release there means the data
was already published with its own noise, and "drawing new noise over a
published release is a second release" (it spends privacy budget again).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dpspark.errors import ParameterError
from dpspark.release.errors import ReleaseExistsError, ReleaseWriteError

MANIFEST_NAME = "manifest.json"
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def temp_prefix(final: Path) -> str:
    """Name prefix of the temporary directories for ``final``."""
    return f".{final.name}.tmp-"


def check_output_path(out_path: str | Path) -> Path:
    """Refuse an output path that already exists (call this before drawing any noise); returns it absolute."""
    final = Path(out_path).absolute()
    if not final.name or final.name in (".", ".."):
        raise ParameterError(f"{out_path}: not a usable release directory name")
    if (final / MANIFEST_NAME).exists():
        raise ReleaseExistsError(
            f"{final}: a release already exists there; refusing to overwrite it "
            "(drawing new noise over a published release is a second release)"
        )
    if os.path.lexists(final):
        raise ReleaseExistsError(f"{final}: the output path already exists; choose a new path for the release")
    if not final.parent.is_dir():
        raise ReleaseWriteError(errno.ENOENT, f"{final.parent}: the parent directory of the release does not exist")
    return final


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temp_dirs(final: Path) -> list[Path]:
    """Remove leftover temporary directories of ``final`` whose writer is gone; returns those removed."""
    removed = []
    pattern = re.compile(re.escape(temp_prefix(final)) + r"(\d+)-[0-9a-f]{16}")
    try:
        entries = list(os.scandir(final.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False) or _pid_alive(int(match.group(1))):
            continue
        path = Path(entry.path)
        try:
            children = list(os.scandir(path))
            if all(c.is_file(follow_symlinks=False) and _FILE_NAME.fullmatch(c.name) for c in children):
                shutil.rmtree(path)
                removed.append(path)
        except OSError:
            continue  # not ours to fight over; it is ignored either way
    return removed


def fsync_file(path: Path) -> None:
    """fsync one file's data and metadata."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """fsync a directory so that entries created or renamed in it are durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_release_dir(out_path: str | Path) -> Iterator[Path]:
    """Yield an empty temporary directory; on normal exit publish it at ``out_path`` atomically.

    On any exception the temporary directory is removed and nothing appears at
    ``out_path``. OS errors (disk full, permissions) become
    :class:`ReleaseWriteError` naming the path.
    """
    final = check_output_path(out_path)
    clean_stale_temp_dirs(final)
    tmp = final.parent / f"{temp_prefix(final)}{os.getpid()}-{secrets.token_hex(8)}"
    try:
        os.mkdir(tmp, 0o755)
    except OSError as exc:
        raise ReleaseWriteError(exc.errno, f"{final}: cannot create the temporary directory {tmp.name} "
                                f"next to the release ({exc.strerror})") from None
    try:
        yield tmp
        for child in os.scandir(tmp):
            fsync_file(Path(child.path))
        fsync_dir(tmp)
        if os.path.lexists(final):  # appeared while we were writing
            raise ReleaseExistsError(f"{final}: the output path appeared while the release was being written; "
                                     "refusing to overwrite it")
        os.rename(tmp, final)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, (ReleaseWriteError, ReleaseExistsError)):
            where = exc.filename or final
            raise ReleaseWriteError(exc.errno, f"{final}: writing the release failed at {where} "
                                    f"({exc.strerror or exc}); nothing was published") from exc
        raise
    try:
        fsync_dir(final.parent)
    except OSError:
        pass  # the rename is done; durability of the parent entry is best effort on odd filesystems
