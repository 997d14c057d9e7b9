"""Issue 33 s1: a family whose implemented noise is exactly a PLD law records it at the charge, and
`dpspark budget` composes it by PLD; a law worse than the charge (a wrong sensitivity) is refused.

Real releases (Arrow engine, no JVM), a real ledger: the dense histogram at n = 10 runs GeoSample (FastSample's
public fallback), the clamped two-sided geometric at p/q, one key per unit."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.errors import ParameterError
from dpspark.ledger import Ledger
from dpspark.privacy.pld import parse_law
from dpspark.rng import DEFAULT_LAMBDA
from tests.support.configs import dense_toml

BUDGET = '[budget]\nledger = "l.sqlite"\ndataset = "demo"\ntotal_epsilon = "20"\ntotal_delta = "1/1000000000"\n'


def _release(tmp_path: Path, name: str, privacy_extra: str = "") -> None:
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(dense_toml("q", privacy_extra, BUDGET).replace('path = "release"', f'path = "{name}"'))
    assert cli(["release", "--config", str(cfg)]) == 0


@pytest.fixture()
def released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"q": pa.array([1, 2, 2, 9], pa.int64())}), tmp_path / "in.parquet")
    for i in range(30):
        _release(tmp_path, f"r{i}")
    return tmp_path


def test_a_dense_release_records_its_geometric_law(released: Path) -> None:
    recs = Ledger(released / "l.sqlite").releases("demo")
    assert len(recs) == 30 and len({r.law for r in recs}) == 1
    law = parse_law(recs[0].law)
    assert law.kind == "geometric" and law.params[1] == 1
    assert law.bias in (0, Fraction(1, 1 << DEFAULT_LAMBDA))
    assert 1 < law.params[0] <= Fraction(1649, 1000)  # p/q <= e^(1/2)
    manifest = json.loads((released / "r0" / "manifest.json").read_bytes())
    assert "GeoSample" in json.dumps(manifest)  # the release ran the law it recorded


def test_budget_composes_the_recorded_laws_by_pld_tighter_than_randomized_response(
        released: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.ledger.pld_statement import statement
    from dpspark.privacy.mixed_composition import Entry

    path = str(released / "l.sqlite")
    capsys.readouterr()
    assert cli(["budget", "demo", "--ledger", path, "--json"]) == 0
    st = json.loads(capsys.readouterr().out)["statement"]
    assert st["method"] == "pld" and "30 by their recorded noise law" in st["how"]
    # the same 30 releases without their law (pure, randomized response) state more
    entries = [r.entry for r in Ledger(path).releases("demo")]
    rr = statement([Entry(e.epsilon, e.delta, e.rho, None) for e in entries], Fraction(1, 10**9))
    assert rr is not None and Fraction(st["epsilon"]) < rr.epsilon


def test_a_law_with_a_wrong_sensitivity_is_refused(released: Path) -> None:
    """The mutant: the recorded law with sensitivity 2 describes a release twice the charge; nothing is spent."""
    led = Ledger(released / "l.sqlite")
    good = json.loads(led.releases("demo")[0].law)
    bad = {**good, "sensitivity": "2"}
    with pytest.raises(ParameterError, match="bigger release than its charge"):
        led.spend("demo", "1/2", 0, "dense", "x", law=bad)
    assert len(led.releases("demo")) == 30
    led.spend("demo", "1/2", 0, "dense", "x", law=good)  # the true law fits its charge


def test_no_law_when_the_noise_is_not_exactly_geometric(tmp_path: Path) -> None:
    """GeoSample records a law (k keys per unit: k copies); FastSample proper (a large n: no fallback, a mixture
    that is not a geometric law) records none."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.mechanisms.registry import construct

    def mech(**privacy: object) -> object:
        raw = {"keys": {"columns": ["city"]}, "universe": {"kind": "categorical", "values": ["a", "b", "c"]},
               "privacy": {"mechanism": "dense", "epsilon": "1", "max_units": 10, "unit_column": "user", **privacy},
               "output": {"path": str(tmp_path / "out")}}
        return construct(ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True))

    law = mech().noise_law()
    assert law is not None and law["law"] == "geometric" and law["sensitivity"] == "1"
    assert mech(max_rows_per_key=3).noise_law()["sensitivity"] == "3"
    two = mech(max_keys_per_unit=2)
    law2 = two.noise_law()
    assert law2 is not None and law2["copies"] == "2"  # k keys: k independent geometric pairs
    led = Ledger(tmp_path / "k.sqlite")
    led.set_total("d", "5", "0")
    with pytest.raises(ParameterError, match="bigger release than its charge"):  # 3 copies on a charge for 2
        led.spend("d", "1", 0, "dense", "x", law={**law2, "copies": "3"})
    led.spend("d", "1", 0, "dense", "x", law=law2)
    big = mech(max_units=10**6)
    assert type(big.counting).__name__ == "FastSample" and big.noise_law() is None


def test_a_recorded_law_never_states_more_than_the_charges() -> None:
    """1000 geometric laws at base 13/8 on the CLI's coarse grid: the irrational losses rounded up cost more
    than the law saves, so the statement falls back to the charges (randomized response), never above them."""
    from dpspark.ledger.pld_statement import DISPLAY_BINS, statement
    from dpspark.privacy.mixed_composition import Entry

    law = json.dumps({"law": "geometric", "base": "13/8", "sensitivity": "1"})
    d = Fraction(1, 10**9)
    for n in (100, 1000):
        with_law = statement([Entry(Fraction(1, 2), Fraction(0), None, law)] * n, d, max_bins=DISPLAY_BINS)
        charged = statement([Entry(Fraction(1, 2), Fraction(0), None, None)] * n, d, max_bins=DISPLAY_BINS)
        assert with_law is not None and charged is not None and with_law.epsilon <= charged.epsilon
    assert with_law.with_law == 0  # n = 1000: the charges' route was the smaller one
