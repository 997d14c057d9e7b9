"""One base class for user-facing errors, and a CLI that catches only that base.

* every exception class defined in ``dpspark`` derives from :class:`DPSparkError`
  (except the audit's test assertion), found by walking the package;
* the command line turns a ``DPSparkError`` into one line and exit code 2, and
  lets anything else (a programming bug, even a bare ``ValueError``) surface as a traceback;
* user mistakes that used to reach the CLI as bare ``ValueError``/``TypeError``/``OSError``
  still give one clean line.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpspark
from dpspark.cli import app as cli
from dpspark.errors import DPSparkError, ParameterError, ParameterTypeError
from dpspark.exact import parse_rational

#: Exception classes in dpspark that are deliberately not user-facing errors, with the reason.
NOT_USER_FACING = {
    "dpspark.audit.auditor.PrivacyViolation": "an AssertionError raised by statistical tests of the mechanisms",
    "dpspark.disk_memo.CorruptCacheEntry": "a UserWarning category: warned (naming the entry), never "
                                                         "raised; the calibration is then computed again",
}

#: Classes that must be found by the walk (so that a walk that finds nothing fails).
EXPECTED = {
    "ConfigError", "UniverseConfigError", "OutOfUniverseError", "KeyTypeError", "CompactPlanError",
    "ReleaseFormatError", "ReleaseExistsError", "ReleaseWriteError", "SchemaViolation", "KeyNotInUniverseError",
    "LedgerError", "LedgerUnreadable", "BudgetNotConfigured", "BudgetExceeded", "JavaNotFoundError", "InputError",
    "RemoteSessionError", "SparkStartError", "CuratorError", "ParameterError", "ParameterTypeError", "DPSparkError",
}


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a dpspark module (modules whose optional dependencies are absent are skipped)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(dpspark.__path__, "dpspark."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (e.g. Spark Connect's client) is not installed
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_dpspark_exception_is_a_dpspark_error() -> None:
    classes = _exception_classes()
    names = {qual.rsplit(".", 1)[1] for qual in classes}
    assert EXPECTED <= names, f"the walk missed {sorted(EXPECTED - names)}"
    stray = sorted(q for q, c in classes.items() if not issubclass(c, DPSparkError) and q not in NOT_USER_FACING)
    assert not stray, f"user-facing errors must derive from dpspark.errors.DPSparkError: {stray}"
    assert set(NOT_USER_FACING) <= set(classes), "an exemption names a class that no longer exists"


def test_second_bases_are_kept() -> None:
    """Callers that catch ValueError, TypeError, OSError or RuntimeError keep working."""
    from dpspark.api.config import ConfigError
    from dpspark.ledger import LedgerError
    from dpspark.release import ReleaseExistsError, ReleaseFormatError, ReleaseWriteError
    from dpspark.universe import KeyTypeError

    assert issubclass(ConfigError, ValueError) and issubclass(ReleaseFormatError, ValueError)
    assert issubclass(ReleaseExistsError, FileExistsError) and issubclass(ReleaseWriteError, OSError)
    assert issubclass(LedgerError, RuntimeError) and issubclass(KeyTypeError, TypeError)
    assert issubclass(ParameterError, ValueError) and issubclass(ParameterTypeError, TypeError)


def test_parse_rational_errors_are_user_facing_and_keep_their_types() -> None:
    with pytest.raises(TypeError, match="float") as float_err:
        parse_rational(0.1, "epsilon")  # ground rule 1: a float stays a TypeError
    assert isinstance(float_err.value, ParameterTypeError)
    with pytest.raises(ValueError, match="cannot read") as bad:
        parse_rational("one tenth", "epsilon")
    assert isinstance(bad.value, ParameterError)
    assert parse_rational("1/10", "epsilon") == Fraction(1, 10)


def _one_error_line(capsys: pytest.CaptureFixture[str], command: str) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("[dpspark ")]  # progress lines are not errors
    assert len(lines) == 1 and lines[0].startswith(f"dpspark {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("bug", [KeyError("k"), ValueError("bare"), TypeError("bare"), OSError("bare"), RuntimeError("x")])
def test_a_programming_bug_is_not_caught(monkeypatch: pytest.MonkeyPatch, bug: Exception) -> None:
    """Exceptions that are not DPSparkError (here raised by the command itself) propagate as tracebacks."""

    def broken(args: object) -> int:
        raise bug

    monkeypatch.setattr(cli, "_cmd_mechanism", broken)
    with pytest.raises(type(bug)):
        cli.main(["mechanism", "--n", "10", "--epsilon", "1"])


def test_a_dpspark_error_is_one_line_and_exit_code_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def refused(args: object) -> int:
        raise ParameterError("something the user can fix")

    monkeypatch.setattr(cli, "_cmd_mechanism", refused)
    assert cli.main(["mechanism", "--n", "10", "--epsilon", "1"]) == 2
    assert _one_error_line(capsys, "mechanism").endswith("something the user can fix")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--epsilon", "abc"], "epsilon: cannot read 'abc'"),
        (["--epsilon", "0"], "epsilon must be > 0"),
        (["--epsilon", "1", "--beta", "2"], "beta must be in (0, 1)"),
        (["--epsilon", "1", "--gamma", "2"], "gamma must be 1/g"),
        (["--epsilon", "2", "--rule", "pow2"], "the 'pow2' rule needs epsilon <= 1"),
        (["--epsilon", "1", "--count", "11"], "c must be a count in [0, n]"),
    ],
)
def test_bad_mechanism_arguments_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert cli.main(["mechanism", "--n", "10", *argv]) == 2
    assert message in _one_error_line(capsys, "mechanism")


def _config(tmp_path: Path, privacy: str = 'epsilon = "1"') -> Path:
    pq.write_table(pa.table({"q": pa.array(["a"]), "u": pa.array([1], pa.int64())}), tmp_path / "in.parquet")
    path = tmp_path / "release.toml"
    path.write_text(
        '[input]\npath = "in.parquet"\n[keys]\ncolumns = ["q"]\n[universe]\nkind = "string"\nmax_bytes = 4\n'
        f'[privacy]\nmechanism = "stability"\n{privacy}\ndelta = "1e-6"\nmax_units = 1000\n[output]\npath = "rel"\n'
    )
    return path


def test_bad_config_is_one_line_and_exit_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, "epsilon = 0.1")  # a TOML float: refused, it is not exact
    assert cli.main(["release", "--config", str(cfg)]) == 2
    line = _one_error_line(capsys, "release")
    assert str(cfg) in line and "privacy.epsilon is a TOML float" in line
    assert cli.main(["release", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "config file not found" in _one_error_line(capsys, "release")


def test_unusable_output_paths_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both fail before any Spark session starts: the parent cannot be created, or the path has no name."""
    cfg = _config(tmp_path)
    (tmp_path / "a-file").write_text("x")
    assert cli.main(["release", "--config", str(cfg), "--output", str(tmp_path / "a-file" / "sub" / "rel")]) == 2
    assert f"{tmp_path / 'a-file' / 'sub'}: cannot create the directory" in _one_error_line(capsys, "release")
    assert cli.main(["release", "--config", str(cfg), "--output", "/"]) == 2
    assert "not a usable release directory name" in _one_error_line(capsys, "release")


def test_bad_budget_arguments_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    assert cli.main(["budget", "sales", "--ledger", ledger, "--total", "lots"]) == 2
    assert "cannot read 'lots'" in _one_error_line(capsys, "budget")
    assert cli.main(["budget", "sales", "--ledger", ledger, "--total", "1", "--delta-total", "2"]) == 2
    assert "must be < 1" in _one_error_line(capsys, "budget")
    assert cli.main(["budget", "not/an-id", "--ledger", ledger, "--total", "1"]) == 2
    assert "dataset_id must be a declared identifier" in _one_error_line(capsys, "budget")


@pytest.mark.spark
def test_key_column_of_the_wrong_type_is_one_line(spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The preflight finds a string column where the universe wants integers (the Parquet schema alone, before
    any spend): one line on both engines, not a traceback."""
    cfg = _config(tmp_path)
    cfg.write_text(cfg.read_text().replace('kind = "string"\nmax_bytes = 4', 'kind = "int_range"\nlo = 0\nhi = 9'))
    message = "key column 'q' has type string; this universe reads an integer column"
    for engine in ("spark", "arrow"):
        assert cli.main(["release", "--config", str(cfg), "--engine", engine]) == 2
        err = capsys.readouterr().err  # progress lines, then the error
        assert "Traceback" not in err
        line = err.strip().splitlines()[-1]
        assert line.startswith("dpspark release: error: ")
        assert message in line and "before any budget is spent" in line
        assert not (tmp_path / "rel").exists()


@pytest.mark.spark
def test_a_bad_spark_master_is_one_line(tmp_path: Path) -> None:
    """A master URL Spark rejects: one line and exit code 2 (a fresh process, so no running session is reused)."""
    cfg = _config(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    proc = subprocess.run([sys.executable, "-m", "dpspark.cli.app", "release", "--config", str(cfg), "--master", "bogus"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "dpspark release: error: cannot start a local Spark session (master 'bogus')" in proc.stderr
    assert not (tmp_path / "rel").exists()
