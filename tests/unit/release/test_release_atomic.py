"""Atomic release writes: nothing partial at the final path, existing releases refused, leftovers cleaned."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpspark.lookup import open_release
from dpspark.release import ReleaseExistsError, ReleaseWriteError, check_output_path
from dpspark.release import atomic, writer
from dpspark.mechanisms.histogram import writer as sparse
from dpspark.universe import IntRangeUniverse
from tests.support.release_support import hand_release, write

U = IntRangeUniverse(0, 99, "v")


def _release():
    return hand_release(U, [3, 7, 50], [20, 30, 40])


def _temp_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if ".tmp-" in p.name)


def test_exception_inside_writer_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args, **kwargs):
        raise RuntimeError("injected failure while writing the manifest")

    monkeypatch.setattr(writer, "seal_manifest", boom)
    with pytest.raises(RuntimeError, match="injected"):
        write(tmp_path, U, ["v"], _release())
    assert list(tmp_path.iterdir()) == []


def test_disk_full_gives_a_clear_error_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(table, where, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sparse.pq, "write_table", full)
    with pytest.raises(ReleaseWriteError) as info:
        write(tmp_path, U, ["v"], _release())
    msg = str(info.value)
    assert str(tmp_path / "rel") in msg and "No space left" in msg and "nothing was published" in msg
    assert info.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_permission_error_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path, mode=0o777):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(atomic.os, "mkdir", denied)
    with pytest.raises(ReleaseWriteError, match="Permission denied") as info:
        write(tmp_path, U, ["v"], _release())
    assert str(tmp_path / "rel") in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_existing_release_is_never_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path, U, ["v"], _release())
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    with pytest.raises(ReleaseExistsError, match="second release"):
        write(tmp_path, U, ["v"], hand_release(U, [1], [99]))
    with pytest.raises(ReleaseExistsError, match="second release"):
        check_output_path(path)
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    assert _temp_dirs(tmp_path) == []


def test_existing_other_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "rel").write_text("not a release")
    with pytest.raises(ReleaseExistsError, match="already exists"):
        write(tmp_path, U, ["v"], _release())
    assert (tmp_path / "rel").read_text() == "not a release"


def test_missing_parent_directory(tmp_path: Path) -> None:
    with pytest.raises(ReleaseWriteError, match="parent directory"):
        write(tmp_path / "nope", U, ["v"], _release())


def test_leftover_temp_dirs_are_cleaned_only_when_stale(tmp_path: Path) -> None:
    dead = tmp_path / ".rel.tmp-99999999-0123456789abcdef"  # no such process
    dead.mkdir()
    (dead / "bins.parquet").write_bytes(b"PAR1 partial")
    alive = tmp_path / f".rel.tmp-{os.getpid()}-fedcba9876543210"  # a live writer: left alone
    alive.mkdir()
    odd = tmp_path / ".rel.tmp-99999998-00000000000000aa"  # holds something a writer never makes
    (odd / "sub").mkdir(parents=True)
    path = write(tmp_path, U, ["v"], _release())
    assert not dead.exists() and alive.exists() and odd.exists()
    assert open_release(path).count(6) == 30  # index 7 is key 6


CRASH = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from dpspark.release import writer
    from tests.support.release_support import hand_release, write
    from dpspark.universe import IntRangeUniverse

    def crash(manifest):
        os._exit(17)  # the process dies after bins.parquet is written, before the manifest

    writer.seal_manifest = crash
    u = IntRangeUniverse(0, 99, "v")
    write(Path({out!r}), u, ["v"], hand_release(u, [3], [20]))
    """
)


def test_crash_leaves_only_a_recognisable_temp_dir(tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parents[3])
    proc = subprocess.run([sys.executable, "-c", CRASH.format(root=root, out=str(tmp_path))], capture_output=True)
    assert proc.returncode == 17, proc.stderr.decode()[-2000:]
    assert not (tmp_path / "rel").exists()
    leftovers = _temp_dirs(tmp_path)
    assert len(leftovers) == 1 and leftovers[0].startswith(".rel.tmp-")
    assert sorted(p.name for p in (tmp_path / leftovers[0]).iterdir()) == ["bins.parquet"]
    path = write(tmp_path, U, ["v"], _release())  # the next run cleans it up and succeeds
    assert _temp_dirs(tmp_path) == []
    assert open_release(path).count(49) == 40
