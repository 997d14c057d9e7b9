"""The leak scan finds secrets (true counts, raw keys) in every written form, and only as whole tokens."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from dpspark.audit import assert_no_leaks, blobs_from_paths, find_leaks

TRUE_COUNT = 48_213
RAW_KEY = "alice@example.com"
BYTES_KEY = b"\x00\x17\xfe\x80secret-bytes"
INDEX = 0x1F2E3D4C5B6A7988  # a 0-based universe index


def test_clean_blobs_pass() -> None:
    manifest = json.dumps({"n": 100000, "epsilon": "1/10", "counts_file": "part-0.parquet", "bins": 412})
    log = "released 412 bins in 3.2 s; delta = 1/1000000\nseed source os.urandom"
    assert find_leaks({"manifest.json": manifest, "stderr": log}, [TRUE_COUNT, RAW_KEY, BYTES_KEY, INDEX]) == []
    assert_no_leaks([manifest, log], [TRUE_COUNT, RAW_KEY])


@pytest.mark.parametrize(
    "blob,secret,form",
    [
        (f"ValueError: count {TRUE_COUNT} exceeds n", TRUE_COUNT, "decimal"),
        (json.dumps({"c": TRUE_COUNT}), TRUE_COUNT, "decimal"),
        (f"debug: c=0x{TRUE_COUNT:x}", TRUE_COUNT, "hex (0x)"),
        (f"c={TRUE_COUNT:08X}", TRUE_COUNT, "hex"),
        (f"row {INDEX:032x} dropped", INDEX, "hex"),  # a 16-byte big-endian index, zero padded
        (f"key {RAW_KEY} not in universe", RAW_KEY, "raw"),
        (json.dumps({"key": "zoë\n" + RAW_KEY}, ensure_ascii=False), "zoë\n" + RAW_KEY, "json-escaped"),
        (json.dumps({"key": "zoë\n" + RAW_KEY}), "zoë\n" + RAW_KEY, "json-ascii-escaped"),
        (json.dumps({"hex": RAW_KEY.encode().hex()}), RAW_KEY, "utf-8 hex"),
        (json.dumps({"hex": BYTES_KEY.hex().upper()}), BYTES_KEY, "hex"),
        (base64.b64encode(BYTES_KEY).decode(), BYTES_KEY, "base64"),
        (b"binary log \x00\x17\xfe\x80secret-bytes end", BYTES_KEY, "raw bytes"),
    ],
)
def test_each_written_form_is_found(blob: str | bytes, secret: int | str | bytes, form: str) -> None:
    leaks = find_leaks({"blob": blob}, [secret])
    assert form in {leak.form for leak in leaks}, leaks
    with pytest.raises(AssertionError) as info:
        assert_no_leaks({"blob": blob}, [secret])
    message = str(info.value)
    assert "secret #0" in message and "'blob'" in message
    if isinstance(secret, int):
        assert str(secret) not in message  # the report locates the leak without repeating it


def test_numbers_match_only_as_whole_tokens() -> None:
    count = 4821
    assert find_leaks(["ids 148210 and 948213, time 3.4821 s"], [count]) == []
    assert find_leaks(["value 0004821 (padded)"], [count]) != []
    assert find_leaks(["-4821"], [-4821]) != [] and find_leaks(["4821"], [-4821]) == []
    # bare hex is searched only from 4 hex digits on ("be" or "a" would match words)
    assert find_leaks(["alpha beta"], [0xBE, 10]) == []


def test_several_blobs_and_secrets_are_all_reported() -> None:
    blobs = {"a": f"{TRUE_COUNT}", "b": "nothing here", "c": f"{RAW_KEY} and {TRUE_COUNT}"}
    leaks = find_leaks(blobs, [TRUE_COUNT, RAW_KEY])
    assert {(leak.blob, leak.secret_index) for leak in leaks} == {("a", 0), ("c", 0), ("c", 1)}


def test_bad_secrets_are_refused() -> None:
    for bad in ("", b"", True, 1.5):
        with pytest.raises((TypeError, ValueError)):
            find_leaks(["x"], [bad])  # type: ignore[list-item]


def test_scan_a_release_directory(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"n": 100, "algorithm": "StabilityHistogram"}))
    (tmp_path / "logs" / "driver.log").write_text(f"INFO read {TRUE_COUNT} rows for key {RAW_KEY}\n")
    blobs = blobs_from_paths([tmp_path])
    assert set(blobs) == {str(tmp_path / "manifest.json"), str(tmp_path / "logs" / "driver.log")}
    leaks = find_leaks(blobs, [TRUE_COUNT, RAW_KEY])
    assert {(Path(leak.blob).name, leak.secret_index) for leak in leaks} == {("driver.log", 0), ("driver.log", 1)}
    with pytest.raises(ValueError, match="max_bytes"):
        blobs_from_paths([tmp_path], max_bytes=10)
