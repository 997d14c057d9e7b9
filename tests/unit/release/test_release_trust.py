"""Issue 20 section 7: releases whose statements can be trusted.

The seal is a plain SHA-256 that anyone can recompute, so each test edits a real manifest and reseals it
with hashlib alone. Readers re-derive what the manifest determines (the zCDP -> (eps, delta) conversion,
statements from mechanism.parameters, n) and refuse what disagrees; a consistent forgery opens, and only a
signature (``trusted_keys``, ``dpspark verify --key``) or the ledger (``dpspark verify --ledger``) catches it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.lookup import open_release
from dpspark.privacy.measures import ZCDP
from dpspark.release.errors import ReleaseExistsError, ReleaseFormatError

try:  # imported lazily so that the re-derivation tests run (and fail) on a dpspark without signatures
    from dpspark.release.signature import ReleaseSignatureError, generate_keypair, sign_release
except ImportError:  # pragma: no cover - old main
    ReleaseSignatureError = generate_keypair = sign_release = None  # type: ignore[assignment,misc]
from tests.support.release_fixtures import KINDS, make_release
from tests.support.release_fixtures import copy_release as _copy, reseal as _reseal


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    return {kind: make_release(kind, root) for kind in KINDS}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("keys")
    key, pub = generate_keypair(root / "team")
    _, other = generate_keypair(root / "other")
    return key, pub, other


def _frac(obj: dict[str, Any]) -> Fraction:
    return Fraction(int(obj["num"], 0) if isinstance(obj["num"], str) else obj["num"],
                    int(obj["den"], 0) if isinstance(obj["den"], str) else obj["den"])


def _set_rho(statement: dict[str, Any], rho: Fraction) -> None:
    statement["statement"]["measure"]["rho"] = {"num": rho.numerator, "den": rho.denominator}


def _halve_rho(doc: dict[str, Any], key: str = "add_remove") -> None:
    st = doc["privacy"]["statements"][key]
    _set_rho(st, _frac(st["statement"]["measure"]["rho"]) / 2)


# --- re-derivation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["answers_gaussian", "gaussian_model", "distribution", "sample_product"])
def test_a_halved_rho_is_refused(fixtures, tmp_path: Path, kind: str) -> None:
    """Old main: a rho halved by hand and resealed opened without complaint."""
    rel = _copy(fixtures, kind, tmp_path)
    _reseal(rel, _halve_rho)
    with pytest.raises(ReleaseFormatError, match=r"manifest.json: privacy.statements.add_remove"):
        open_release(rel)


def test_a_halved_rho_with_its_conversion_recomputed_is_refused(fixtures, tmp_path: Path) -> None:
    """Even with the (eps, delta) conversion redone, mechanism.parameters still says the true rho."""
    from dpspark.privacy.conversions import zcdp_to_approx_dp_cks

    rel = _copy(fixtures, "gaussian_model", tmp_path)

    def change(doc: dict[str, Any]) -> None:
        stmts = doc["privacy"]["statements"]
        rho = _frac(stmts["add_remove"]["statement"]["measure"]["rho"]) / 2
        delta = Fraction(1, 10**9)
        for key, r in (("add_remove", rho), ("replacement", 4 * rho)):  # group privacy redone too
            _set_rho(stmts[key], r)
            stmts[f"{key}_approx_dp"]["statement"]["measure"] = zcdp_to_approx_dp_cks(ZCDP(r), delta).describe()

    _reseal(rel, change)
    with pytest.raises(ReleaseFormatError, match="section.rho"):
        open_release(rel)


@pytest.mark.parametrize("kind", ["answers_gaussian", "gaussian_model", "distribution"])
def test_a_zcdp_conversion_that_does_not_match_its_rho_is_refused(fixtures, tmp_path: Path, kind: str) -> None:
    rel = _copy(fixtures, kind, tmp_path)

    def change(doc: dict[str, Any]) -> None:
        eps = doc["privacy"]["statements"]["add_remove_approx_dp"]["statement"]["measure"]["epsilon"]
        eps["extra"] = {"num": 1, "den": 10}

    _reseal(rel, change)
    with pytest.raises(ReleaseFormatError, match="add_remove_approx_dp: is not the CKS20 conversion"):
        open_release(rel)


def _times_ten(doc: dict[str, Any], config: bool) -> None:
    n = int(doc["max_units"]) * 10
    doc["max_units"] = str(n)
    for st in doc["privacy"]["statements"].values():
        st["statement"]["relation"]["n"] = n
    if config:
        doc["config"]["max_units"] = n
        if "max_units" in doc["mechanism"]["parameters"]:
            doc["mechanism"]["parameters"]["max_units"] = n


@pytest.mark.parametrize("kind", ["answers_bounded", "sample_kary", "gaussian_model"])
def test_n_times_ten_is_refused(fixtures, tmp_path: Path, kind: str) -> None:
    """Old main: max_units and every relation's n multiplied by ten, resealed, opened."""
    rel = _copy(fixtures, kind, tmp_path)
    _reseal(rel, lambda d: _times_ten(d, config=False))
    with pytest.raises(ReleaseFormatError, match="config.max_units"):
        open_release(rel)


@pytest.mark.parametrize("kind, field, value", [
    ("answers_bounded", "certified_delta", "1/1000000000"),
    ("answers_gaussian", "sigma", "1"),
    ("sample_kary", "exp_eps", "2"),
    ("sample_product", "rho", "1/1024"),
])
def test_statements_must_equal_the_mechanism_parameters(fixtures, tmp_path: Path, kind: str, field: str,
                                                        value: str) -> None:
    rel = _copy(fixtures, kind, tmp_path)
    _reseal(rel, lambda d: d["mechanism"]["parameters"].update({field: value}))
    with pytest.raises(ReleaseFormatError, match="privacy.statements"):
        open_release(rel)


def test_a_statement_above_the_requested_budget_is_refused(fixtures, tmp_path: Path) -> None:
    rel = _copy(fixtures, "sample_bernoulli", tmp_path)
    _reseal(rel, lambda d: d["config"].update(epsilon="1/100"))  # the release states ~1/50
    with pytest.raises(ReleaseFormatError, match="more than the requested budget"):
        open_release(rel)


def test_replacement_by_group_privacy_is_rederived(fixtures, tmp_path: Path) -> None:
    rel = _copy(fixtures, "answers_gaussian", tmp_path)
    _reseal(rel, lambda d: _halve_rho(d, "replacement"))
    with pytest.raises(ReleaseFormatError, match="privacy.statements.replacement"):
        open_release(rel)


# --- signatures -----------------------------------------------------------------------------------------
def test_a_consistent_forgery_is_caught_only_by_a_signature(fixtures, keys, tmp_path: Path, capsys) -> None:
    key, pub, other = keys
    rel = _copy(fixtures, "answers_bounded", tmp_path)
    sign_release(rel, key)
    assert open_release(rel, trusted_keys=[pub]).manifest.max_units == 400
    assert cli(["verify", str(rel), "--key", str(pub)]) == 0
    with pytest.raises(ReleaseSignatureError, match="not a trusted key"):
        open_release(rel, trusted_keys=[other])
    _reseal(rel, lambda d: _times_ten(d, config=True))  # every n field, consistently
    assert open_release(rel).manifest.max_units == 4000  # re-derivation cannot see it
    with pytest.raises(ReleaseSignatureError, match="does not match manifest.json"):
        open_release(rel, trusted_keys=[pub])
    assert cli(["verify", str(rel), "--key", str(pub)]) == 1
    assert "does not match" in capsys.readouterr().err


def test_unsigned_or_damaged_signatures_are_refused(fixtures, keys, tmp_path: Path) -> None:
    key, pub, _ = keys
    rel = _copy(fixtures, "sample_kary", tmp_path)
    with pytest.raises(ReleaseSignatureError, match="not signed"):
        open_release(rel, trusted_keys=[pub])
    sign_release(rel, key)
    with pytest.raises(ReleaseExistsError, match="already signed"):
        sign_release(rel, key)  # never replaced
    sig = rel / "manifest.sig"
    doc = json.loads(sig.read_bytes())
    doc["signature"] = ("00" if doc["signature"][:2] != "00" else "11") + doc["signature"][2:]
    sig.write_text(json.dumps(doc))
    with pytest.raises(ReleaseSignatureError, match="does not match"):
        open_release(rel, trusted_keys=[pub])
    sig.write_bytes(b"\xff garbage")
    with pytest.raises(ReleaseSignatureError, match="not a dpspark release signature"):
        open_release(rel, trusted_keys=[str(pub)])
    assert list(rel.glob(".manifest.sig.tmp-*")) == []


def _answers_config(tmp_path: Path, ledger: Path | None = None) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": [float(i % 7) for i in range(300)]}), data)
    budget = (f'[budget]\nledger = "{ledger}"\ndataset = "people"\ntotal_epsilon = "10"\ntotal_delta = "1/1000"\n'
              if ledger else "")
    cfg = tmp_path / "answers.toml"
    cfg.write_text(f'[input]\npath = "{data}"\n[privacy]\nmechanism = "gaussian"\nepsilon = "1"\n'
                   f'delta = "1/1000000"\nmax_units = 300\n[[queries]]\nname = "total"\nkind = "sum"\n'
                   f'column = "x"\nlo = "0"\nhi = "7"\n{budget}[output]\npath = "{tmp_path / "rel"}"\n')
    return cfg


def test_release_sign_is_atomic_with_the_release(keys, tmp_path: Path, capsys) -> None:
    key, pub, other = keys
    assert cli(["release", "--config", str(_answers_config(tmp_path)), "--sign", str(key)]) == 0
    rel = tmp_path / "rel"
    assert (rel / "manifest.sig").is_file() and open_release(rel, trusted_keys=[pub]).kind == "answers"
    assert cli(["verify", str(rel), "--key", str(other)]) == 1
    capsys.readouterr()
    # a bad key file is refused before anything is read or written
    bad = tmp_path / "bad.key"
    bad.write_text("not a key")
    bad.chmod(0o600)  # a key file readable by others is refused first (issue 31)
    assert cli(["release", "--config", str(_answers_config(tmp_path / "b")), "--sign", str(bad)]) == 2
    assert "not an unencrypted PEM private key" in capsys.readouterr().err and not (tmp_path / "b" / "rel").exists()


# --- ledger ----------------------------------------------------------------------------------------------
def test_verify_against_the_ledger(tmp_path: Path, capsys) -> None:
    ledger = tmp_path / "ledger.sqlite"
    assert cli(["release", "--config", str(_answers_config(tmp_path, ledger))]) == 0
    rel = tmp_path / "rel"
    assert cli(["verify", str(rel), "--ledger", str(ledger)]) == 0
    assert "the ledger charged exactly" in capsys.readouterr().out
    with sqlite3.connect(ledger) as conn:  # the ledger charged less than the release states
        conn.execute("UPDATE releases SET epsilon = '1/2'")
    assert cli(["verify", str(rel), "--ledger", str(ledger)]) == 1
    err = capsys.readouterr().err
    assert "the ledger charged (epsilon, delta) = (1/2, 1/1000000)" in err and "more than the charged" in err
    with sqlite3.connect(ledger) as conn:
        conn.execute("UPDATE releases SET epsilon = '1', release_path = '/elsewhere'")
    assert cli(["verify", str(rel), "--ledger", str(ledger)]) == 1
    assert "belongs to another release" in capsys.readouterr().err  # matched by the manifest's release id


def test_the_lookup_path_stays_light(fixtures) -> None:
    """Opening and verifying releases (signature included) never imports pyspark."""
    code = ("import sys; from dpspark.lookup import open_release; "
            f"[open_release(p) for p in {[str(p) for p in fixtures.values()]!r}]; "
            "assert 'pyspark' not in sys.modules, 'pyspark'; assert 'cryptography' not in sys.modules, 'crypto'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])


def test_n_times_ten_is_refused_in_a_histogram_release(fixtures, tmp_path: Path) -> None:
    """Old main: a sparse release with max_units times ten, resealed, opened (with a ten times larger count range)."""
    rel = _copy(fixtures, "sparse", tmp_path)
    _reseal(rel, lambda d: d.update(max_units=str(int(d["max_units"]) * 10)))
    with pytest.raises(ReleaseFormatError, match="config.max_units differs"):
        open_release(rel)
