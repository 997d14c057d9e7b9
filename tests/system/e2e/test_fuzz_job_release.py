"""Fuzz the release readers on a real job release (short run of ``scripts/fuzz_readers.py``; the long run is opt-in).

The release comes from the real job (in-process Spark). Inputs mutate its
manifest bytes, its bins (resealed, so the Parquet reader runs), single
manifest fields (resealed) and truncate its bins; only ReleaseFormatError may
come out, and every input must finish within the per-input time limit.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from types import ModuleType

import pytest

from dpspark.api.config import load_config
from dpspark.engine.runner import run_release
from dpspark.rng import SeededRandom
from tests.support.fault_support import REPO, make_queries, release_state, write_config

pytestmark = pytest.mark.spark


def _load_fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_readers", REPO / "scripts" / "fuzz_readers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.import_readers()
    return module


@pytest.fixture(scope="module")
def fuzzer() -> ModuleType:
    return _load_fuzzer()


@pytest.fixture(scope="module")
def job_release(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzzjob")
    data = make_queries(root / "queries.parquet", rows=2000, users=500, vocab=200)
    cfg = write_config(root, data, ledger=root / "ledger.sqlite", max_units=2000, unit=False)
    out = run_release(load_config(cfg, output=str(root / "rel")), spark=spark, rng=SeededRandom(b"fuzz"),
                      progress=lambda m: None)
    assert release_state(out) == "whole"
    return out


def test_short_fuzz_of_a_real_release(fuzzer: ModuleType, job_release: Path, tmp_path: Path) -> None:
    target = fuzzer.Target(job_release, tmp_path / "scratch")
    seen = fuzzer.run_hypothesis(target, 200, 60.0, 1)
    seen.update(fuzzer.run_random(target, 400, 60.0, 2))
    assert sum(seen.values()) == 600
    # the fuzz is not stuck at the checksum: resealed bins and resealed fields reach the deep checks, and pass
    # when the change is harmless
    for case in ("0-rejected", "1-rejected", "2-rejected", "3-rejected", "3-accepted", "4-rejected"):
        assert seen[case] > 0, seen
    # the manifest checksum covers its bytes: no changed manifest is ever accepted
    assert seen["0-accepted"] == 0 and seen["1-accepted"] == 0 and seen["4-accepted"] <= seen["4-rejected"]


def test_time_limit_flags_a_hang(fuzzer: ModuleType) -> None:
    limit = fuzzer.TimeLimit(0.2)
    start = time.monotonic()
    with pytest.raises(fuzzer.Hang):
        limit.run(lambda: time.sleep(5) or "never")
    assert time.monotonic() - start < 3
    assert limit.run(lambda: "done") == "done"


def test_a_non_format_error_is_reported(fuzzer: ModuleType, job_release: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    target = fuzzer.Target(job_release, tmp_path / "scratch")

    def broken(*args, **kwargs):
        raise KeyError("a reader bug")

    monkeypatch.setattr(fuzzer, "parse_manifest", broken)
    with pytest.raises(KeyError):
        fuzzer.run_random(target, 50, 10.0, 3)


def test_short_fuzz_of_a_compact_release(fuzzer: ModuleType, tmp_path: Path) -> None:
    """The same fuzz cases on the checked-in compact release: the Arrow IPC coefficient file is the data file."""
    target = fuzzer.Target(REPO / "tests" / "support" / "data" / "compact_kav" / "release", tmp_path / "scratch")
    assert target.data_name == "coefficients.arrow"
    seen = fuzzer.run_hypothesis(target, 200, 60.0, 3)
    seen.update(fuzzer.run_random(target, 400, 60.0, 4))
    assert sum(seen.values()) == 600
    for case in ("0-rejected", "1-rejected", "2-rejected", "3-rejected", "4-rejected"):
        assert seen[case] > 0, seen
    assert seen["0-accepted"] == 0 and seen["1-accepted"] == 0
    # a resealed coefficient file of the right shape is a valid (different) polynomial; any other change is refused
    assert seen["4-accepted"] <= seen["4-rejected"]


def test_fuzz_finding_invalid_utf8_column_name_is_a_format_error(fuzzer: ModuleType, tmp_path: Path) -> None:
    """Regression for an atheris finding: a resealed coefficient file whose column name is not valid UTF-8
    made pyarrow raise UnicodeDecodeError from the schema check; it must be a ReleaseFormatError."""
    import base64

    target = fuzzer.Target(REPO / "tests" / "support" / "data" / "compact_kav" / "release", tmp_path / "scratch")
    assert fuzzer.one_input(target, base64.b64decode("p////w8AAP///w8AAAAA7p6wAADunrAo")) == "2-rejected"
