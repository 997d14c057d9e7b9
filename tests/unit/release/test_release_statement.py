"""The statement envelope: non-histogram releases write, read, inspect and refuse damage like histograms do."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.api.config import ReleaseSpec
from dpspark.engine.runner import run_release
from dpspark.lookup import open_release
from dpspark.lookup.statement_base import StatementLookup
from dpspark.mechanisms.base import MechanismSpecError
from dpspark.mechanisms.zcdp_budget import RHO_BITS, converted_epsilon, rho_within
from dpspark.privacy import AccuracyClaim, AccuracyStatement, AddRemove, PrivacyStatement, Substitute, ZCDP
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.kinds import ReleaseKind, register_kind, unregister_kind
from dpspark.release.manifest import read_manifest, seal_manifest
from dpspark.release.statements import StatementManifest, StatementRelease, standard_statements, write_statement_release
from dpspark.rng import SeededRandom
from tests.support.plugins import toy as toy_family
from tests.support.plugins.toy.mechanism import ToyDGaussSum
from dpspark.mechanisms.registry import construct

DELTA = Fraction(1, 10**9)


# --- the rho a zCDP mechanism runs at -----------------------------------------------------------------


def test_rho_within_is_the_largest_grid_rho_that_fits() -> None:
    rho = rho_within("1", DELTA)
    assert rho.denominator <= 1 << RHO_BITS
    assert converted_epsilon(rho, DELTA) <= 1
    assert converted_epsilon(rho + Fraction(1, 1 << RHO_BITS), DELTA) > 1  # one grid step more does not fit


def test_rho_option_is_checked_against_the_budget() -> None:
    assert rho_within("1", DELTA, "1/100") == Fraction(1, 100)
    with pytest.raises(MechanismSpecError, match="above privacy.epsilon"):
        rho_within("1", DELTA, "1/10")
    with pytest.raises(TypeError, match="float"):
        rho_within("1", DELTA, 0.01)


def test_standard_statements_of_a_zcdp_release() -> None:
    st = PrivacyStatement(ZCDP("1/8"), AddRemove(100), "a theorem")
    named = dict(standard_statements(st, delta=DELTA))
    assert list(named) == ["add_remove", "replacement", "add_remove_approx_dp", "replacement_approx_dp"]
    assert named["replacement"].relation == Substitute(100)
    assert named["replacement"].rho == Fraction(1, 2)  # group privacy over 2 steps: 2^2 rho
    assert named["add_remove_approx_dp"].delta == DELTA
    assert named["add_remove_approx_dp"].epsilon.le(converted_epsilon(Fraction(1, 8), DELTA))


# --- write / read / damage without Spark ---------------------------------------------------------------


def _release() -> StatementRelease:
    st = PrivacyStatement(ZCDP("1/8"), AddRemove(100), "a theorem")
    return StatementRelease(
        algorithm="Test", parameters={"sigma": Fraction(7, 2), "k": 3},
        privacy=standard_statements(st, delta=DELTA),
        accuracy=AccuracyStatement([AccuracyClaim.deterministic(12), AccuracyClaim.tv_distance("1/10", 50)]),
        section={"answers": [Fraction(1, 3), 2]}, tables={"answers": pa.table({"v": [1, 2, 3]})},
    )


CONFIG = {"mechanism": "toy_dgauss_sum", "max_units": 100, "epsilon": "1", "delta": "1/1000000000"}


@pytest.fixture
def kind() -> object:
    register_kind(ReleaseKind("toy_statement", "statements", "section", reader=StatementLookup))  # no section check
    yield "toy_statement"
    unregister_kind("toy_statement")


def _write(tmp_path: Path, kind: str) -> Path:
    return write_statement_release(
        tmp_path / "rel", release=_release(), universe=None, key_columns=[], config=CONFIG,
        input_description={"path": "x.parquet"}, rng_name="SeededRandom (TEST ONLY)",
        created_utc="2026-01-01T00:00:00Z", kind=kind)


def test_round_trip(tmp_path: Path, kind: str) -> None:
    out = _write(tmp_path, kind)
    m = read_manifest(out)
    assert isinstance(m, StatementManifest)
    assert {k: v.describe() for k, v in m.privacy.items()} == {k: v.describe() for k, v in _release().privacy}
    assert list(m.privacy) == [k for k, _ in _release().privacy]
    assert m.accuracy == _release().accuracy
    assert m.section == {"answers": ["1/3", 2]}
    assert m.max_units == 100 and m.rng_test_only
    rel = open_release(out)
    assert isinstance(rel, StatementLookup)
    assert rel.table("answers").column("v").to_pylist() == [1, 2, 3]
    assert rel.tables() == ["answers"]
    assert "add_remove: rho = 0.125" in rel.privacy
    assert "always (probability 1)" in rel.accuracy_text
    with pytest.raises(KeyError, match="no table"):
        rel.table("other")


def test_inspect_prints_every_statement(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _write(tmp_path, kind)
    assert cli(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    for piece in ("kind", "toy_statement", "add_remove: rho = 0.125", "replacement_approx_dp: eps ",
                  "parameter sigma", "Checksums: all files match the manifest"):
        assert piece in text


def test_damaged_table_is_named(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _write(tmp_path, kind)
    path = out / "answers.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ReleaseFormatError, match="answers.parquet: sha256 mismatch"):
        open_release(out)
    assert cli(["inspect", str(out)]) == 1
    assert "SOME FILES ARE DAMAGED" in capsys.readouterr().out


def test_edited_manifest_is_refused(tmp_path: Path, kind: str) -> None:
    out = _write(tmp_path, kind)
    path = out / "manifest.json"
    text = path.read_text()
    path.write_text(text.replace('"k": 3', '"k": 4'))
    with pytest.raises(ReleaseFormatError, match="checksum mismatch"):
        read_manifest(out)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda o: o["privacy"]["statements"]["add_remove"]["statement"]["relation"].update(n=99), "not max_units"),
        (lambda o: o["privacy"]["order"].pop(), "privacy.order"),
        (lambda o: o["privacy"]["statements"].pop("add_remove") and o["privacy"]["statements"].pop("replacement")
         and None, "privacy.order"),
        (lambda o: o.pop("section"), "section"),
        (lambda o: o.update(envelope="other"), "unknown manifest envelope"),
        (lambda o: o["accuracy"]["statement"]["claims"][0].update(scope="nowhere"), "invalid statement"),
        (lambda o: o["privacy"]["statements"]["add_remove"]["statement"]["measure"].update(measure="x"),
         "invalid statement"),
    ],
)
def test_resealed_but_wrong_manifest_is_refused(tmp_path: Path, kind: str, edit, message: str) -> None:
    out = _write(tmp_path, kind)
    path = out / "manifest.json"
    obj = json.loads(path.read_text())
    edit(obj)
    path.write_bytes(seal_manifest(obj))
    with pytest.raises(ReleaseFormatError, match=message):
        read_manifest(out)


# --- a registered zCDP mechanism end to end on Spark ---------------------------------------------------

TOML = """
[input]
path = "in.parquet"
[sum]
column = "x"
hi = 5
[privacy]
mechanism = "toy_dgauss_sum"
epsilon = "1"
delta = "1/1000000000"
max_units = 1000
[output]
path = "release"
"""


@pytest.fixture
def toy() -> object:
    toy_family.register()
    yield ToyDGaussSum
    toy_family.unregister()


@pytest.mark.spark
def test_statement_mechanism_end_to_end(spark, tmp_path: Path, toy, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.api.config import load_config
    from dpspark.engine.runner import choose_engine
    from dpspark.api.session import Session

    xs = [i % 9 for i in range(600)]  # clipped to [0, 5]
    pq.write_table(pa.table({"x": pa.array(xs, pa.int64())}), tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text(TOML)
    cfg = load_config(tmp_path / "c.toml")
    mech = construct(cfg)
    # engine support is derived from the stages: clipped sums have a kernel on both engines, so a local file
    # runs on Arrow by default (the toy once declared Spark only, when the Arrow context had no sums)
    assert choose_engine(cfg, None, False) == "arrow"
    out = run_release(cfg, spark=spark, rng=SeededRandom(5), progress=lambda _m: None)
    rel = open_release(out)
    truth = sum(min(x, 5) for x in xs)
    assert abs(int(rel.section["answer"]) - truth) <= 10 * mech.noise.sigma
    assert rel.statements["add_remove"].rho == mech.noise.zcdp_rho(5) <= mech.rho
    assert rel.statements["add_remove_approx_dp"].epsilon.le(1)  # never more than the ledger spends
    assert cli(["inspect", str(out)]) == 0
    assert "toy_dgauss_sum: ToyDGaussSum" in capsys.readouterr().out

    import pandas as pd

    with Session(pd.DataFrame({"x": xs}), max_units=1000, budget={"epsilon": "1", "delta": "1/1000000000"}, rng=SeededRandom(6)) as s:
        rel2 = s.release(mechanism="toy_dgauss_sum", epsilon="1", delta="1/1000000000",
                         sections={"sum": {"column": "x", "hi": 5}}, output=tmp_path / "r2")
        assert abs(int(rel2.section["answer"]) - truth) <= 10 * mech.noise.sigma
        with pytest.raises(Exception, match="exceeds the session budget"):
            s.release(mechanism="toy_dgauss_sum", epsilon="1", delta="1/1000000000",
                      sections={"sum": {"column": "x", "hi": 5}})


def test_config_refusals_before_any_data(tmp_path: Path, toy) -> None:
    from dpspark.api.config import ConfigError

    base = {"input": {"path": str(tmp_path), "format": "parquet"}, "sum": {"column": "x", "hi": 5},
            "privacy": {"mechanism": "toy_dgauss_sum", "epsilon": "1", "delta": "1/1000000000", "max_units": 10},
            "output": {"path": str(tmp_path / "o")}}
    ReleaseSpec.from_dict(base)
    with pytest.raises(ConfigError, match="above privacy.epsilon"):
        ReleaseSpec.from_dict({**base, "privacy": {**base["privacy"], "rho": "1"}})
    with pytest.raises(ConfigError, match="float"):
        ReleaseSpec.from_dict({**base, "privacy": {**base["privacy"], "rho": 0.1}})
    with pytest.raises(ConfigError, match=r"\[keys\] does not apply"):
        ReleaseSpec.from_dict({**base, "keys": {"columns": ["x"]}})
    with pytest.raises(ConfigError, match="delta is required"):
        ReleaseSpec.from_dict({**base, "privacy": {k: v for k, v in base["privacy"].items() if k != "delta"}})


def test_lookup_cli_explains_there_are_no_keys(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _write(tmp_path, kind)
    assert cli(["lookup", str(out), "1"]) == 2
    assert "has no keys to look up; run `dpspark inspect" in capsys.readouterr().err
