"""A release builds its plan once: one mechanism construction per CLI release, dry run and Session.release;
the padding clock starts where the backend's last data pass ended, not when a progress line passes by."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.mechanisms.registry import mechanism_class
from tests.support.configs import dense_toml


def _config(tmp_path: Path, privacy_extra: str = "") -> Path:
    pq.write_table(pa.table({"v": pa.array([1, 2, 2, 9], pa.int64())}), tmp_path / "in.parquet")
    path = tmp_path / "c.toml"
    path.write_text(dense_toml(privacy_extra=privacy_extra))
    return path


def _count_constructions(monkeypatch: pytest.MonkeyPatch, name: str = "dense") -> list[object]:
    """Every construction of the registered class of ``name``, recorded (the class still builds as before)."""
    cls: Any = mechanism_class(name)
    real = cls.__init__
    built: list[object] = []

    def counting(self: object, spec: object) -> None:
        built.append(spec)
        real(self, spec)

    monkeypatch.setattr(cls, "__init__", counting)
    return built


def _no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpspark.engine.spark.local as local

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the Arrow engine started Spark")

    monkeypatch.setattr(local, "local_session", refuse)
    monkeypatch.setattr(local, "active_session", refuse)


def test_one_construction_per_cli_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    _no_spark(monkeypatch)
    config = _config(tmp_path)
    built = _count_constructions(monkeypatch)
    assert cli(["release", "--config", str(config), "--engine", "arrow"]) == 0
    assert (tmp_path / "release" / "manifest.json").exists()
    assert len(built) == 1


def test_one_construction_per_dry_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    _no_spark(monkeypatch)
    config = _config(tmp_path)
    built = _count_constructions(monkeypatch)
    assert cli(["release", "--config", str(config), "--dry-run"]) == 0
    assert "all data-free checks pass" in capsys.readouterr().out
    assert len(built) == 1 and not (tmp_path / "release").exists()


def test_one_construction_per_session_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dpspark

    _no_spark(monkeypatch)
    table = pa.table({"v": pa.array([1, 2, 2, 9], pa.int64())})
    with dpspark.Session(table, max_units=10, budget={"epsilon": "1"}) as s:
        built = _count_constructions(monkeypatch)
        s.release(mechanism="dense", keys=["v"], universe={"kind": "int_range", "lo": 0, "hi": 9},
                  epsilon="1/2", output=str(tmp_path / "rel"))
        assert len(built) == 1
        assert len(s.releases) == 1 and s.remaining != s.budget.total  # the session budget was charged once


def test_padding_starts_at_the_backends_last_pass_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pad_until gets the backend's last_pass_end, even when the progress line comes much later."""
    import dpspark.engine.backend as backend
    import dpspark.engine.runner as runner
    from dpspark.api.config import load_config

    _no_spark(monkeypatch)
    opened: list[Any] = []
    real_open = backend.open_backend

    @contextmanager
    def spy(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with real_open(*args, **kwargs) as ctx:
            opened.append(ctx)
            yield ctx

    pad_starts: list[float] = []
    monkeypatch.setattr(backend, "open_backend", spy)
    monkeypatch.setattr(runner, "pad_until", lambda start, _seconds: pad_starts.append(start))
    line_times: list[float] = []

    def progress(msg: str) -> None:
        if msg == "counts collected on the driver":
            time.sleep(0.05)  # the line passes by well after the pass ended
            line_times.append(time.monotonic())

    cfg = load_config(_config(tmp_path, 'pad_seconds = "1/1000"'))
    runner.run_release(cfg, progress=progress)
    assert len(opened) == 1 and opened[0].last_pass_end is not None
    assert pad_starts == [opened[0].last_pass_end]
    assert all(pad_starts[0] <= t - 0.04 for t in line_times)  # not the time the progress string passed by
