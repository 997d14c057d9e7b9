"""Issue 31 s6: a release cannot be replayed under another name, and a retried release verifies.

The manifest states a release id (128 bits from the system CSPRNG, drawn at the ledger charge) that the
ledger stores with the spend; ``dpspark verify --ledger`` matches by it. Real releases (Arrow engine, no JVM),
real signatures, a real ledger.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.ledger import Ledger
from dpspark.release.manifest import seal_manifest
from dpspark.release.signature import generate_keypair


def _config(tmp_path: Path, ledger: Path, out: str) -> Path:
    data = tmp_path / "in.parquet"
    if not data.exists():
        pq.write_table(pa.table({"x": [float(i % 7) for i in range(300)]}), data)
    cfg = tmp_path / f"{out}.toml"
    cfg.write_text(f'[input]\npath = "{data}"\n[privacy]\nmechanism = "gaussian"\nepsilon = "1"\n'
                   f'delta = "1/1000000"\nmax_units = 300\n[[queries]]\nname = "total"\nkind = "sum"\n'
                   f'column = "x"\nlo = "0"\nhi = "7"\n[budget]\nledger = "{ledger}"\ndataset = "people"\n'
                   f'total_epsilon = "10"\ntotal_delta = "1/1000"\n[output]\npath = "{tmp_path / out}"\n')
    return cfg


def _id(release: Path) -> str:
    return str(json.loads((release / "manifest.json").read_bytes())["release_id"])


@pytest.fixture()
def signed(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    key, pub = generate_keypair(tmp_path / "team")
    ledger = tmp_path / "l.sqlite"
    for name in ("r1", "r2"):
        assert cli(["release", "--config", str(_config(tmp_path, ledger, name)), "--sign", str(key)]) == 0
    return tmp_path / "r1", tmp_path / "r2", pub, ledger


def test_the_manifest_states_the_id_the_ledger_charged(signed: tuple[Path, Path, Path, Path]) -> None:
    r1, r2, _, ledger = signed
    ids = {_id(r1), _id(r2)}
    assert len(ids) == 2 and all(re.fullmatch("[0-9a-f]{32}", i) for i in ids)
    rows = Ledger(ledger).releases("people")
    assert {r.release_id for r in rows} == ids
    for r in rows:  # a Gaussian answers release is composed in zCDP: the entry holds its rho
        manifest = json.loads((Path(r.release_path) / "manifest.json").read_bytes())
        rho = manifest["privacy"]["statements"]["add_remove"]["statement"]["measure"]["rho"]
        assert r.rho is not None and (r.rho.numerator, r.rho.denominator) == (int(rho["num"]), int(rho["den"]))


def test_a_signed_release_copied_under_another_name_fails_verify(signed: tuple[Path, Path, Path, Path],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    r1, r2, pub, ledger = signed
    assert cli(["verify", str(r1), "--key", str(pub), "--ledger", str(ledger)]) == 0
    shutil.rmtree(r1)
    shutil.copytree(r2, r1)  # the better of two draws, published under r1's name: signature and seal intact
    capsys.readouterr()
    assert cli(["verify", str(r1), "--key", str(pub), "--ledger", str(ledger)]) == 1
    assert "belongs to another release" in capsys.readouterr().err


def test_a_manifest_stripped_of_its_id_fails_verify(signed: tuple[Path, Path, Path, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    r1, _, _, ledger = signed
    doc = json.loads((r1 / "manifest.json").read_bytes())
    del doc["release_id"]
    (r1 / "manifest.json").write_bytes(seal_manifest(doc))
    (r1 / "manifest.sig").unlink()
    capsys.readouterr()
    assert cli(["verify", str(r1), "--ledger", str(ledger)]) == 1
    assert "names a release id but the manifest states none" in capsys.readouterr().err


def test_a_retried_release_verifies_and_names_the_killed_attempt(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The documented retry: killed after the spend (the row stays 'spent'), run again with the same config."""
    ledger = tmp_path / "l.sqlite"
    cfg = _config(tmp_path, ledger, "r")
    Ledger(ledger).set_total("people", "10", "1/1000")
    Ledger(ledger).spend("people", "1", "1/1000000", "gaussian", str(tmp_path / "r"))  # the killed attempt
    assert cli(["release", "--config", str(cfg)]) == 0
    capsys.readouterr()
    assert cli(["verify", str(tmp_path / "r"), "--ledger", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert "also charged (a killed attempt): spend 1" in out and "the ledger charged exactly" in out
    assert [r.status for r in Ledger(ledger).releases("people")] == ["spent", "released"]


def test_a_release_from_before_ids_matches_its_released_spend_by_path(signed: tuple[Path, Path, Path, Path],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A release and ledger written before release ids: the one released spend for the path, not the killed one."""
    import sqlite3

    r1, _, _, ledger = signed
    doc = json.loads((r1 / "manifest.json").read_bytes())
    del doc["release_id"]
    (r1 / "manifest.json").write_bytes(seal_manifest(doc))
    with sqlite3.connect(ledger) as conn:
        conn.execute("UPDATE releases SET release_id = NULL")
    Ledger(ledger).spend("people", "1", "1/1000000", "gaussian", str(r1))  # a later killed attempt at the same path
    capsys.readouterr()
    assert cli(["verify", str(r1), "--ledger", str(ledger)]) == 0
    assert "also charged (a killed attempt): spend 3" in capsys.readouterr().out


def test_a_histogram_release_states_its_id_and_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The counts form of the manifest (sparse and compact histograms) reads the release id too."""
    from tests.support.configs import dense_toml

    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"q": pa.array([1, 2, 2, 9], pa.int64())}), tmp_path / "in.parquet")
    cfg = tmp_path / "c.toml"
    cfg.write_text(dense_toml("q", "", '[budget]\nledger = "l.sqlite"\ndataset = "demo"\ntotal_epsilon = "1"\n'))
    assert cli(["release", "--config", str(cfg)]) == 0
    (rec,) = Ledger(tmp_path / "l.sqlite").releases("demo")
    assert rec.release_id == _id(tmp_path / "release") and rec.rho is None  # a pure release: (1/2, 0)
    capsys.readouterr()
    assert cli(["verify", str(tmp_path / "release"), "--ledger", str(tmp_path / "l.sqlite")]) == 0
