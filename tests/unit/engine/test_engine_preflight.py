"""Every data-free check runs before any engine starts and before any spend; --dry-run runs them all."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.api.config import ConfigError, load_config
from dpspark.ledger import Ledger

CONFIG = """
[input]
path = "in.parquet"
[keys]
columns = ["q"]
[universe]
kind = "string"
max_bytes = 8
[privacy]
mechanism = "stability"
epsilon = "1"
delta = "{delta}"
max_units = {n}
unit_column = "u"
[output]
path = "rel"
{budget}
"""


def write(tmp_path: Path, *, delta: str = "1e-9", n: int = 1000, budget: str = "") -> Path:
    pq.write_table(pa.table({"u": [1, 2], "q": ["a", "b"]}), tmp_path / "in.parquet")
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(delta=delta, n=n, budget=budget))
    return path


def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything tries to start Spark."""
    import dpspark.engine.spark.local as session

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("Spark was started before a data-free check refused the release")

    monkeypatch.setattr(session, "local_session", refuse)
    monkeypatch.setattr(session, "active_session", refuse)


def test_dry_run_prints_a_readable_plan_and_passes(tmp_path: Path, capsys, monkeypatch) -> None:
    no_spark(monkeypatch)
    assert cli(["release", "--config", str(write(tmp_path)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "mechanism        stability" in out and "eps = ln(21/8)" in out and "null" not in out
    assert all(len(tok) <= 20 for tok in out.replace(",", " ").split() if tok.isdigit())
    assert not (tmp_path / "rel").exists()


def test_dry_run_fails_on_existing_output_and_exhausted_budget(tmp_path: Path, capsys, monkeypatch) -> None:
    no_spark(monkeypatch)
    ledger = tmp_path / "l.sqlite"
    budget = f'[budget]\nledger = "{ledger}"\ndataset = "d"\ntotal_epsilon = "1/2"\ntotal_delta = "1/1000"'
    cfg = write(tmp_path, budget=budget)
    assert cli(["release", "--config", str(cfg), "--dry-run"]) == 2
    assert "privacy budget exceeded" in capsys.readouterr().err
    assert not ledger.exists()  # a dry run writes nothing, not even a new ledger
    assert cli(["release", "--config", str(cfg)]) == 2  # the real run refuses before Spark, too
    assert not ledger.exists() or Ledger(ledger).releases("d") == []
    (tmp_path / "rel").mkdir()
    (tmp_path / "rel" / "manifest.json").write_text("{}")
    assert cli(["release", "--config", str(write(tmp_path)), "--dry-run"]) == 2
    assert "exists" in capsys.readouterr().err


def test_stability_threshold_at_n_is_refused_by_the_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tau reaches n"):
        load_config(write(tmp_path, delta="1e-300", n=3))


def test_a_missing_input_column_is_refused_before_the_spend(tmp_path: Path, capsys) -> None:
    """The local file's schema (no rows) is read before the budget is spent: nothing is charged."""
    budget = '[budget]\nledger = "l.sqlite"\ndataset = "d"\ntotal_epsilon = "10"\ntotal_delta = "1e-6"'
    path = write(tmp_path, budget=budget)
    pq.write_table(pa.table({"user": [1, 2], "q": ["a", "b"]}), tmp_path / "in.parquet")  # no column "u"
    assert cli(["release", "--config", str(path)]) != 0
    err = capsys.readouterr().err
    assert "has no column(s) 'u'" in err and "before any budget is spent" in err
    assert not (tmp_path / "rel").exists()
    ledger = tmp_path / "l.sqlite"
    assert not ledger.exists() or Ledger(ledger).spent("d").epsilon == 0


def test_a_parquet_inputs_schema_is_its_footer_and_a_damaged_file_is_named(tmp_path: Path) -> None:
    """Issue 35 §1: one local Parquet file's schema is read from its footer (no pyarrow.dataset); the same schema
    as the dataset's, and a damaged file still gets the dataset path's value-free InputError, with no context."""
    import pyarrow.dataset as ds

    from dpspark.engine.arrow.backend import InputError, input_schema

    good = tmp_path / "in.parquet"
    pq.write_table(pa.table({"u": pa.array([1, 2], pa.int64()), "q": ["a", "b"]}), good)
    assert input_schema(str(good)) == (ds.dataset(str(good)).schema, False)
    assert input_schema(f"file://{good}")[0] == ds.dataset(str(good)).schema
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 secret-row-value 12345 PAR1")
    with pytest.raises(InputError) as err:
        input_schema(str(bad))
    assert str(bad) in str(err.value) and "secret" not in str(err.value) and "12345" not in str(err.value)
    assert err.value.__context__ is None and err.value.__cause__ is None
