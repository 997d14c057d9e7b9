"""Issue 31 section 7: key files, signed releases' data files and extra files in a release directory.

Real keys (``dpspark keygen``), real releases (tests/support/release_fixtures.py, no JVM), the real CLI. Old main:
a FIFO given as a key hung ``verify --key``, ``sign`` and ``release --sign``; a private key of mode 0644 was
used without a word; ``open_release(path, verify=False, trusted_keys=[...])`` opened an altered data file; and
an extra file in a signed release directory verified silently.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from dpspark.cli.app import main as cli
from dpspark.errors import ParameterError
from dpspark.lookup import open_release
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.signature import (ReleaseSignatureError, generate_keypair, load_private_key, load_public_key,
                                       sign_release)
from tests.support.release_fixtures import make_release


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    return {kind: make_release(kind, root) for kind in ("answers_bounded", "sparse")}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return generate_keypair(tmp_path_factory.mktemp("keys") / "team")


@pytest.fixture
def signed(fixtures: dict[str, Path], keys: tuple[Path, Path], tmp_path: Path) -> Path:
    rel = tmp_path / "rel"
    shutil.copytree(fixtures["answers_bounded"], rel)
    sign_release(rel, keys[0])
    return rel


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail (rather than hang the suite) when the call under test blocks: old main blocked on opening a FIFO."""
    def fire(signum: int, frame: Any) -> None:
        raise TimeoutError("blocked on the key file")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "key.fifo"
    os.mkfifo(path)
    return path


# --- FIFOs and other non-regular key files ----------------------------------------------------------------------
def test_a_fifo_as_a_public_key_is_refused_by_verify(signed: Path, tmp_path: Path, no_hang, capsys) -> None:
    fifo = _fifo(tmp_path)
    assert cli(["verify", str(signed), "--key", str(fifo)]) != 0
    assert "not a regular file" in capsys.readouterr().err


def test_a_fifo_as_a_private_key_is_refused_by_sign(fixtures, tmp_path: Path, no_hang, capsys) -> None:
    rel = tmp_path / "rel"
    shutil.copytree(fixtures["answers_bounded"], rel)
    fifo = _fifo(tmp_path)
    assert cli(["sign", str(rel), "--key", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err and not (rel / "manifest.sig").exists()


def test_a_fifo_as_a_private_key_is_refused_by_release_sign_before_any_read(tmp_path: Path, no_hang,
                                                                           capsys) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [float(i % 7) for i in range(300)]}), tmp_path / "in.parquet")
    cfg = tmp_path / "answers.toml"
    cfg.write_text(f'[input]\npath = "{tmp_path / "in.parquet"}"\n[privacy]\nmechanism = "gaussian"\nepsilon = "1"\n'
                   'delta = "1/1000000"\nmax_units = 300\n[[queries]]\nname = "total"\nkind = "sum"\ncolumn = "x"\n'
                   f'lo = "0"\nhi = "7"\n[output]\npath = "{tmp_path / "rel"}"\n')
    fifo = _fifo(tmp_path)
    assert cli(["release", "--config", str(cfg), "--sign", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err and not (tmp_path / "rel").exists()


@pytest.mark.parametrize("load", [load_private_key, load_public_key])
def test_a_directory_or_a_missing_file_is_a_parameter_error(tmp_path: Path, load: Callable[[Any], Any]) -> None:
    with pytest.raises(ParameterError, match="not a regular file"):
        load(tmp_path)
    with pytest.raises(ParameterError, match="cannot read"):
        load(tmp_path / "missing.pem")


def test_a_fifo_as_the_signature_file_is_refused(signed: Path, keys, no_hang) -> None:
    (signed / "manifest.sig").unlink()
    os.mkfifo(signed / "manifest.sig")
    with pytest.raises(ReleaseSignatureError, match="not a regular file"):
        open_release(signed, trusted_keys=[keys[1]])


# --- private key permissions ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [0o644, 0o666, 0o640, 0o604])
def test_a_private_key_readable_by_others_is_refused(keys, tmp_path: Path, mode: int, capsys) -> None:
    key = tmp_path / "team.key"
    shutil.copyfile(keys[0], key)
    os.chmod(key, mode)
    with pytest.raises(ParameterError, match=rf"mode {mode:04o}.*chmod 600"):
        load_private_key(key)
    rel = tmp_path / "rel"
    make_release("answers_bounded", tmp_path / "fx")
    shutil.copytree(tmp_path / "fx" / "answers_bounded", rel)
    assert cli(["sign", str(rel), "--key", str(key)]) == 2
    assert "chmod 600" in capsys.readouterr().err and not (rel / "manifest.sig").exists()


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_key_of_its_owner_only_is_used(keys, tmp_path: Path, mode: int) -> None:
    key = tmp_path / "team.key"
    shutil.copyfile(keys[0], key)
    os.chmod(key, mode)
    assert load_private_key(key) is not None


def test_keygen_writes_a_private_key_that_loads(tmp_path: Path) -> None:
    key, pub = generate_keypair(tmp_path / "k")
    assert os.stat(key).st_mode & 0o777 == 0o600
    assert load_private_key(key).public_key() is not None and load_public_key(pub) is not None


def test_a_public_key_may_be_world_readable(keys, tmp_path: Path) -> None:
    pub = tmp_path / "team.pub"
    shutil.copyfile(keys[1], pub)
    os.chmod(pub, 0o644)
    assert load_public_key(pub) is not None


# --- trusted keys verify the data files -------------------------------------------------------------------------
def test_trusted_keys_verify_the_data_files_even_with_verify_false(signed: Path, keys) -> None:
    data = sorted(p for p in signed.glob("*.parquet"))[0]
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x01  # same size: only the checksum can tell
    data.write_bytes(bytes(raw))
    open_release(signed, verify=False)  # no keys: the caller chose not to check (documented)
    with pytest.raises(ReleaseFormatError, match=rf"{data.name}.*sha256"):
        open_release(signed, verify=False, trusted_keys=[keys[1]])  # old main: opened the altered file
    with pytest.raises(ReleaseFormatError, match="sha256"):
        open_release(signed, verify=True, trusted_keys=[keys[1]])


def test_trusted_keys_with_intact_files_open(signed: Path, keys) -> None:
    rel = open_release(signed, verify=False, trusted_keys=[keys[1]])
    assert rel.kind == "answers"


# --- extra files ------------------------------------------------------------------------------------------------
def test_verify_lists_extra_files_in_a_signed_release(signed: Path, keys, capsys) -> None:
    assert cli(["verify", str(signed), "--key", str(keys[1])]) == 0
    assert not any(l.startswith("extra") for l in capsys.readouterr().out.splitlines())  # clean: nothing listed
    (signed / "README.txt").write_text("these counts are exact")  # a claim no signature covers
    (signed / "more").mkdir()
    assert cli(["verify", str(signed), "--key", str(keys[1])]) == 0  # listed, not a failure (the readers ignore them)
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("extra"))
    assert "2 file(s)" in line and "README.txt" in line and "more/" in line and "not part of it" in line


def test_verify_lists_at_most_twenty_names(fixtures, tmp_path: Path, capsys) -> None:
    rel = tmp_path / "rel"
    shutil.copytree(fixtures["sparse"], rel)
    for i in range(25):
        (rel / f"x{i:02d}").write_text("")
    assert cli(["verify", str(rel)]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("extra"))
    assert "25 file(s)" in line and "x19" in line and "x20" not in line and "and 5 more" in line
