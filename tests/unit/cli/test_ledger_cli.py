"""``dpspark budget DATASET``: shows each release, exact spent and left; --total configures; clear errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from dpspark.cli.budget import add_budget_commands
from dpspark.ledger import Ledger


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dpspark")
    add_budget_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_budget_shows_releases_spent_and_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.sqlite"
    assert run(["budget", "sales", "--ledger", str(path), "--total", "1", "--delta-total", "1/1000000"]) == 0
    led = Ledger(path)
    rec = led.spend("sales", "1/10", "1/10000000", "StabilityHistogram", "/out/r1")
    led.mark_failed(rec.id)
    led.spend("sales", "1/5", 0, "BasicHistogram", "/out/r2")
    capsys.readouterr()
    assert run(["budget", "sales", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "/out/r1" in out and "failed" in out and "StabilityHistogram" in out
    assert "/out/r2" in out and "BasicHistogram" in out
    assert "spent     epsilon = 3/10" in out and "delta = 1/10000000" in out
    assert "left      epsilon = 7/10" in out and "delta = 9/10000000" in out


def test_budget_on_missing_ledger_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "none.sqlite"
    assert run(["budget", "sales", "--ledger", str(path)]) == 2
    assert f"no budget ledger at {path}" in capsys.readouterr().err
    assert not path.exists()


def test_budget_on_corrupt_ledger_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.sqlite"
    path.write_bytes(b"\x00garbage" * 512)
    assert run(["budget", "sales", "--ledger", str(path)]) == 2
    assert str(path) in capsys.readouterr().err


def test_budget_ledger_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "env.sqlite"
    monkeypatch.setenv("DPSPARK_LEDGER", str(path))
    assert run(["budget", "d", "--total", "1/2"]) == 0
    assert path.exists()
    assert "left      epsilon = 1/2" in capsys.readouterr().out
    assert run(["budget", "d", "--total", "1"]) == 2  # raising needs --allow-increase
    assert "--allow-increase" in capsys.readouterr().err
    assert run(["budget", "d", "--total", "1", "--allow-increase"]) == 0
