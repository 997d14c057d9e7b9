"""The on-disk memo of certified calibrations (dpspark.disk_memo; issue 35 §1, cold CLI checks)."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.mechanisms import zcdp_budget as Z
from dpspark.noise import bounded_calibrate as BC
from dpspark import disk_memo as CC


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DPSPARK_CACHE_DIR", str(tmp_path))
    return tmp_path / "calibrations"


def _no_compute(*args: object, **kwargs: object) -> None:
    raise AssertionError("computed again instead of reading the stored certified result")


def test_a_stored_calibration_is_read_back_identical(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = BC.calibrate(2, "1", "1/1000")
    assert first == BC.calibrate_now(2, "1", "1/1000")
    [entry] = list(cache.glob("bounded_calibration-*.json"))
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    monkeypatch.setattr(BC, "calibrate_now", _no_compute)
    again = BC.calibrate(2, Fraction(1), Fraction(1, 1000))  # the same exact parameters, spelled otherwise
    assert again == first and again.describe() == first.describe()
    with pytest.raises(AssertionError, match="computed again"):  # other parameters: another key
        BC.calibrate(2, "1", "1/1000", sensitivity=2)
    assert entry.exists()


def test_a_refusal_is_never_stored(cache: Path) -> None:
    with pytest.raises(BC.CalibrationRefused):
        BC.calibrate(3, "1", "0")
    assert not cache.exists() or not list(cache.glob("*.json"))


@pytest.mark.parametrize("damage", ["garbage", "checksum", "inconsistent", "other_key", "group_writable"])
def test_a_corrupt_or_untrusted_entry_is_named_and_ignored(cache: Path, damage: str) -> None:
    good = BC.calibrate(2, "1", "1/1000")
    [entry] = list(cache.glob("*.json"))
    doc = json.loads(entry.read_text())
    if damage == "garbage":
        entry.write_text("{not json")
    elif damage == "checksum":  # a smaller M, not resealed
        doc["value"]["M"] = 2
        entry.write_text(json.dumps(doc))
    elif damage == "inconsistent":  # a smaller M, resealed: the numbers no longer agree (R = grid (M - 1) + ...)
        doc["value"]["M"] = good.M - 1
        doc["check"] = CC._check(doc["key"], doc["value"])
        entry.write_text(json.dumps(doc))
    elif damage == "other_key":  # another calibration's entry copied under this name
        doc["key"] = doc["key"].replace('"params":[2,', '"params":[4,')
        doc["check"] = CC._check(doc["key"], doc["value"])
        entry.write_text(json.dumps(doc))
    else:
        os.chmod(entry, 0o664)
    with pytest.warns(CC.CorruptCacheEntry, match=str(entry)):
        again = BC.calibrate(2, "1", "1/1000")
    assert again == good
    if damage != "group_writable":  # rewritten whole (a group-writable one is left for its owner to look at)
        assert json.loads(entry.read_text())["value"]["M"] == good.M


def test_edited_certifier_code_misses_the_old_entry(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    BC.calibrate(2, "1", "1/1000")
    monkeypatch.setattr(CC, "_DIGESTS", {BC.CERTIFIER_MODULES: "0" * 64})
    calls = []
    real = BC.calibrate_now
    monkeypatch.setattr(BC, "calibrate_now", lambda *a: calls.append(a) or real(*a))
    BC.calibrate(2, "1", "1/1000")
    assert len(calls) == 1 and len(list(cache.glob("*.json"))) == 2


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPSPARK_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    BC.calibrate(2, "1", "1/1000")
    assert not any(tmp_path.rglob("*.json"))


def test_zcdp_rho_is_memoised_and_identical(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    eps, d = Fraction(1, 2), Fraction(1, 10**9)
    rho = Z.rho_within(eps, d)
    assert rho == Z._largest_rho(eps, d)
    monkeypatch.setattr(Z, "_largest_rho", _no_compute)
    assert Z.rho_within("1/2", "1/1000000000") == rho
    [entry] = list(cache.glob("zcdp_rho-*.json"))
    doc = json.loads(entry.read_text())
    doc["value"] = str(Fraction(1, 3))  # off the 2^-30 grid, resealed: refused by the decoder
    doc["check"] = CC._check(doc["key"], doc["value"])
    entry.write_text(json.dumps(doc))
    monkeypatch.undo()
    monkeypatch.setenv("DPSPARK_CACHE_DIR", str(cache.parent))
    with pytest.warns(CC.CorruptCacheEntry, match="malformed"):
        assert Z.rho_within(eps, d) == rho
