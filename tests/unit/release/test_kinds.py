"""The one kind registry: built-in kinds declared once in their family folders, runtime kinds, unknown kinds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from dpspark.lookup import open_release
from dpspark.privacy import AccuracyClaim, AccuracyStatement, AddRemove, PrivacyStatement, ZCDP
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.header import seal_manifest
from dpspark.release.kinds import FAMILIES, ReleaseKind, get_kind, kind_names, register_kind, unregister_kind, writer_for
from dpspark.release.manifest import read_manifest
from dpspark.release.statements import StatementRelease, standard_statements
from dpspark.rng import SeededRandom  # noqa: F401  (the suite's generator; the writer only records its name)
from tests.support.plugins.toy.family import KINDS as TOY_KINDS
from tests.support.plugins.toy.reader import ToyLookup

CONFIG = {"mechanism": "toy_dgauss_sum", "max_units": 100, "epsilon": "1", "delta": "1/1000000000"}


@pytest.fixture
def toy_kind() -> object:
    for kind in TOY_KINDS:
        register_kind(kind)
    yield TOY_KINDS[0]
    for kind in TOY_KINDS:
        unregister_kind(kind.name)


def _write(path: Path, answer: object = 7) -> Path:
    st = PrivacyStatement(ZCDP("1/8"), AddRemove(100), "a theorem")
    release = StatementRelease(
        algorithm="Toy", parameters={"k": 1}, privacy=standard_statements(st, delta="1/1000000000"),
        accuracy=AccuracyStatement([AccuracyClaim.deterministic(12)]), section={"answer": answer},
        tables={"answers": pa.table({"v": [1]})})
    return writer_for("toy_statement")(
        path, release=release, universe=None, key_columns=[], config=CONFIG, input_description={"path": "x"},
        rng_name="SeededRandom (TEST ONLY)", created_utc="2026-01-01T00:00:00Z")


def test_every_builtin_kind_is_declared_once_in_its_family_folder() -> None:
    import importlib

    from dpspark.mechanisms.registry import names

    declared: set[str] = set()
    for family, (module, kinds) in FAMILIES.items():
        assert module == f"dpspark.mechanisms.{family}.family"
        for name in kinds:
            kind = get_kind(name)
            assert kind.name == name
            assert all(isinstance(part, str) for part in (kind.reader, kind.writer))  # lazy "module:attr" strings
        decl = importlib.import_module(module)
        assert {k.name for k in decl.KINDS} == set(kinds)
        assert all(target.startswith(f"dpspark.mechanisms.{family}.") for target in decl.MECHANISMS.values())
        declared |= set(decl.MECHANISMS)
    assert {k for _, ks in FAMILIES.values() for k in ks} <= set(kind_names())
    assert declared == set(names())  # every built-in mechanism comes from a family folder's declaration


def test_a_registered_kind_round_trips(tmp_path: Path, toy_kind: ReleaseKind) -> None:
    out = _write(tmp_path / "rel")
    assert read_manifest(out).kind == "toy_statement"
    rel = open_release(out)
    assert isinstance(rel, ToyLookup) and rel.answer() == 7
    assert rel.statements["add_remove"].rho == ZCDP("1/8").rho


def test_the_kind_codec_checks_its_section(tmp_path: Path, toy_kind: ReleaseKind) -> None:
    out = _write(tmp_path / "rel")
    obj = json.loads((out / "manifest.json").read_text())
    obj["section"] = {"answer": 7, "extra": 1}
    (out / "manifest.json").write_bytes(seal_manifest(obj))  # resealed: only the codec can refuse it
    with pytest.raises(ReleaseFormatError, match=r"manifest\.json: a toy_statement section holds exactly"):
        read_manifest(out)


def test_an_unknown_kind_is_refused_naming_the_file(tmp_path: Path, toy_kind: ReleaseKind) -> None:
    out = _write(tmp_path / "rel")
    unregister_kind("toy_statement")
    name = str(out / "manifest.json")
    with pytest.raises(ReleaseFormatError) as err:
        read_manifest(out)
    assert str(err.value) == f"{name}: unknown release kind 'toy_statement'"
    with pytest.raises(ReleaseFormatError, match="unknown release kind 'toy_statement'"):
        open_release(out)
    with pytest.raises(ValueError, match="no writer is registered for release kind 'toy_statement'"):
        writer_for("toy_statement")
    with pytest.raises(ReleaseFormatError, match="where: unknown release kind 'nope'"):
        get_kind("nope", "where")


def test_a_kind_must_use_its_form(tmp_path: Path) -> None:
    register_kind(ReleaseKind("toy_statement", "counts", "toy", reader=ToyLookup, codec=lambda *a: {}))
    try:
        out = tmp_path / "rel"
        register_kind(TOY_KINDS[0])
        _write(out)
        register_kind(ReleaseKind("toy_statement", "counts", "toy", reader=ToyLookup, codec=lambda *a: {}))
        with pytest.raises(ReleaseFormatError, match="a toy_statement release does not use the statements form"):
            read_manifest(out)
    finally:
        unregister_kind("toy_statement")
    with pytest.raises(ValueError, match="form must be one of"):
        ReleaseKind("x", "other", "x", reader=ToyLookup)
    with pytest.raises(ValueError, match="needs a section codec"):
        ReleaseKind("x", "counts", "x", reader=ToyLookup)


def test_reading_the_registry_imports_no_family_code() -> None:
    """Looking a kind up loads only its own declaration; the registry itself names modules, imports none."""
    code = (
        "import sys\n"
        "from dpspark.release.kinds import get_kind\n"
        "get_kind('sparse')\n"
        "fam = sorted(m for m in sys.modules if m.startswith('dpspark.mechanisms.'))\n"
        "assert fam == ['dpspark.mechanisms.histogram', 'dpspark.mechanisms.histogram.family'], fam\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
