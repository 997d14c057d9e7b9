"""Disk full and permission denied at the output path, on the real job (in-process Spark).

Real faults, no monkeypatching: a 64 KiB tmpfs filled up (ENOSPC), a parent
directory made immutable with ``chattr +i`` on ext4 (EPERM even for root, who
ignores permission bits), and a tmpfs remounted read-only (EROFS). Needs
root; skipped where mounting or chattr is not allowed. Each case checks a
clear error naming the path, nothing at the final path and no temporary
directory left, and the ledger spend recorded as failed and not refunded;
once the fault is gone, a rerun to the same path succeeds.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.api.config import load_config
from dpspark.engine.runner import run_release
from dpspark.ledger import STATUS_FAILED, STATUS_RELEASED, Ledger
from dpspark.release import ReleaseWriteError
from dpspark.rng import SeededRandom
from tests.support.fault_support import DATASET, make_queries, records_for, release_state, write_config

pytestmark = pytest.mark.spark


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@contextmanager
def tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` mounted at ``where`` (skips the test if mounting is not allowed)."""
    where.mkdir()
    done = _run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)])
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        if _run(["umount", str(where)]).returncode != 0:
            _run(["umount", "-l", str(where)])


@contextmanager
def immutable(folder: Path) -> Iterator[Path]:
    """``folder`` with the ext2/3/4 immutable attribute set (skips if chattr is not supported)."""
    done = _run(["chattr", "+i", str(folder)])
    if done.returncode != 0:
        pytest.skip(f"chattr +i is not supported here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        _run(["chattr", "-i", str(folder)])


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_queries(tmp_path_factory.mktemp("data") / "queries.parquet", rows=3000, users=800, vocab=300)


def _fails_cleanly(spark, cfg: Path, out: Path, ledger: Path, *errnos: int) -> ReleaseWriteError:
    """Run the job, expect a ReleaseWriteError, and check the path and the ledger."""
    with pytest.raises(ReleaseWriteError) as info:
        run_release(load_config(cfg, output=str(out)), spark=spark, rng=SeededRandom(b"disk"), progress=lambda m: None)
    err = info.value
    assert err.errno in errnos, err
    assert str(out) in str(err) and os.strerror(err.errno) in str(err), str(err)
    assert not os.path.lexists(out)
    assert [p.name for p in out.parent.iterdir() if ".tmp-" in p.name] == []
    assert [r.status for r in records_for(ledger, out)] == [STATUS_FAILED]
    spent = Ledger(ledger).spent(DATASET)
    assert spent.epsilon >= 1 and spent.delta >= Fraction(1, 10**9)  # the failed release still counts
    return err


def test_disk_full(spark, tmp_path: Path, demo_data: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    cfg = write_config(tmp_path, demo_data, ledger=ledger)
    with tmpfs(tmp_path / "small") as small:
        filler = small / "filler"
        with open(filler, "wb") as f:  # leave one 4 KiB page: the temp dir fits, the release does not
            f.write(b"\0" * (60 * 1024))
        out = small / "rel"
        err = _fails_cleanly(spark, cfg, out, ledger, errno.ENOSPC)
        assert "nothing was published" in str(err) or "temporary directory" in str(err)
        assert sorted(p.name for p in small.iterdir()) == ["filler"]
        before = Ledger(ledger).spent(DATASET)
        filler.unlink()  # the fault is gone: nothing was published, so the same path may be released now
        run_release(load_config(cfg, output=str(out)), spark=spark, rng=SeededRandom(b"disk2"),
                    progress=lambda m: None)
        assert release_state(out) == "whole"
        assert [r.status for r in records_for(ledger, out)] == [STATUS_FAILED, STATUS_RELEASED]
        assert Ledger(ledger).spent(DATASET).epsilon == before.epsilon + 1


def test_permission_denied_immutable_parent(spark, tmp_path: Path, demo_data: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    cfg = write_config(tmp_path, demo_data, ledger=ledger)
    parent = tmp_path / "locked"
    parent.mkdir()
    out = parent / "rel"
    with immutable(parent):
        err = _fails_cleanly(spark, cfg, out, ledger, errno.EPERM, errno.EACCES)
        assert "cannot create the temporary directory" in str(err)
        assert list(parent.iterdir()) == []


def test_read_only_filesystem(spark, tmp_path: Path, demo_data: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    cfg = write_config(tmp_path, demo_data, ledger=ledger)
    with tmpfs(tmp_path / "ro") as ro:
        done = _run(["mount", "-o", "remount,ro", str(ro)])
        if done.returncode != 0:
            pytest.skip(f"cannot remount read-only: {done.stderr.strip()}")
        _fails_cleanly(spark, cfg, ro / "rel", ledger, errno.EROFS)
        assert list(ro.iterdir()) == []
