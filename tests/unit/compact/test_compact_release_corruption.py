"""The hardened compact reader: damaged, mismatched, wrong-version and absurd releases give ReleaseFormatError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpspark.lookup import open_release
from dpspark.release import ReleaseFormatError, parse_manifest
from dpspark.mechanisms.compact.coefficients import write_coefficient_file
from dpspark.release.files import file_entry
from dpspark.release.manifest import seal_manifest
from dpspark.universe import IntRangeUniverse
from tests.support.compact_support import build, write

U = IntRangeUniverse(0, 999, "k")
N = 20
COUNTS = {3: 5, 10: 2, 500: 7}


@pytest.fixture(scope="module")
def release():
    return build(U, COUNTS, N, b"corrupt", m=64)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory, release) -> Path:
    return write(tmp_path_factory.mktemp("good"), U, release, batch_rows=8)  # 21 rows: 3 record batches


def _copy(good: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    dst.mkdir(parents=True)
    for p in good.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    return dst


def _reseal(path: Path, change) -> None:
    raw = json.loads((path / "manifest.json").read_text())
    change(raw)
    (path / "manifest.json").write_bytes(seal_manifest(raw))


def _relist(path: Path) -> None:
    """Record the coefficient file's current size and sha256 in the manifest (so the file's content is checked)."""
    entry = file_entry(path / "coefficients.arrow")
    _reseal(path, lambda m: m["files"]["coefficients.arrow"].update(sha256=entry.sha256, bytes=str(entry.size)))


def _fails(path: Path, *fragments: str, **kwargs: Any) -> str:
    with pytest.raises(ReleaseFormatError) as info:
        open_release(path, **kwargs)
    msg = str(info.value)
    for f in fragments:
        assert f in msg, msg
    return msg


def test_good_release_opens_and_matches_the_release_object(good: Path, release) -> None:
    rel = open_release(good)
    assert rel.counts(list(range(1000))).tolist() == release.lookup(list(range(1000)))
    assert np.array_equal(rel.coefficients, release.coefficients)


def test_truncated_coefficients(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    data = (path / "coefficients.arrow").read_bytes()
    (path / "coefficients.arrow").write_bytes(data[: len(data) // 2])
    _fails(path, "coefficients.arrow", "truncated")
    _fails(path, "coefficients.arrow", "truncated", verify=False)
    _relist(path)  # the manifest agrees: the Arrow reader finds the damage
    _fails(path, "coefficients.arrow", "damaged")
    (path / "coefficients.arrow").write_bytes(data[:100])
    _relist(path)  # fewer bytes than l * m/8: refused from the manifest alone
    _fails(path, "manifest.json", "need")


@pytest.mark.parametrize("where", [0, 300, 600, -20, -1])
def test_bit_flipped_coefficients(good: Path, tmp_path: Path, where: int) -> None:
    path = _copy(good, tmp_path)
    data = bytearray((path / "coefficients.arrow").read_bytes())
    data[where] ^= 0x04
    (path / "coefficients.arrow").write_bytes(bytes(data))
    _fails(path, "coefficients.arrow", "sha256 mismatch")
    try:  # the size matches: a flip in the Arrow structure fails the layout checks, one in the values only the checksum
        rel = open_release(path, verify=False)
    except ReleaseFormatError as err:
        assert "coefficients.arrow" in str(err)
        return
    with pytest.raises(ReleaseFormatError, match="sha256 mismatch"):
        rel.verify()


def test_verify_on_request_reloads_verified_bytes(good: Path) -> None:
    rel = open_release(good, verify=False)
    assert not rel.verified
    before = rel.counts(list(range(50)))
    rel.verify()
    assert rel.verified and np.array_equal(rel.counts(list(range(50))), before)


def test_mismatched_checksum_and_wrong_version(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m["files"]["coefficients.arrow"].update(sha256="0" * 64))
    _fails(path, "coefficients.arrow", "sha256 mismatch")
    _reseal(path, lambda m: m.update(schema_version=2))
    _fails(path, "manifest.json", "schema version 2 is not supported")
    raw = bytearray((good / "manifest.json").read_bytes())
    raw[len(raw) // 2] ^= 1
    (path / "manifest.json").write_bytes(bytes(raw))
    _fails(path, "manifest.json")


def _declared(path: Path, **changes: Any) -> str:
    def change(m: dict) -> None:
        for key, value in changes.items():
            section, _, field = key.partition("__")
            target = m["compact"][section] if field else m["compact"]
            target[field or section] = value
    _reseal(path, change)
    with pytest.raises(ReleaseFormatError) as info:
        parse_manifest((path / "manifest.json").read_bytes(), "manifest.json")  # before any file is opened
    return str(info.value)


def test_absurd_ell_and_inconsistent_sizes_are_refused_before_allocation(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    big = str(10**12)
    _reseal(path, lambda m: m.update(max_units=str(10**12 - 1)) or m["compact"]["counting_mechanism"].update(n=str(10**12 - 1)))
    msg = _declared(path, ell=big, coefficients__rows=big)
    assert "file size limit" in msg or "need" in msg
    path = _copy(good, tmp_path / "b")
    assert "ell must be k n + 1" in _declared(path, ell="22", coefficients__rows="22")
    assert "rows differs" in _declared(_copy(good, tmp_path / "c"), coefficients__rows="22")
    assert "byte width" in _declared(_copy(good, tmp_path / "d"), coefficients__byte_width=16)
    msg = _declared(_copy(good, tmp_path / "e"), field__m=128)
    assert "modulus" in msg or "byte width" in msg
    assert "batch_rows" in _declared(_copy(good, tmp_path / "f"), coefficients__batch_rows=str(1 << 30))


def test_universe_too_big_for_the_field(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    spec = {"kind": "int_range", "lo": "0", "hi": str(2**64), "column": "k"}
    _reseal(path, lambda m: m.update(universe=spec, universe_size=str(2**64 + 1)))
    _fails(path, "above 2^m")


def test_sampler_and_privacy_tampering(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m["compact"]["sampler"].update(min_scaled_pmf_at_zero="0x1"))
    _fails(path, "compact.sampler differs")
    path = _copy(good, tmp_path / "b")
    _reseal(path, lambda m: m["compact"]["counting_mechanism"].update(d="0x1234"))
    _fails(path, "d differs")
    path = _copy(good, tmp_path / "c")
    _reseal(path, lambda m: m["compact"]["privacy_pieces"].update(eps_b="0", sampler_epsilon=m["compact"]["privacy_pieces"]["eps_a"]))
    _fails(path, "privacy")
    path = _copy(good, tmp_path / "d")
    _reseal(path, lambda m: m["compact"]["counting_mechanism"].update(t="3"))
    _fails(path, "counting_mechanism")
    path = _copy(good, tmp_path / "e")
    _reseal(path, lambda m: m["accuracy"]["per_query"].update(holds_for_true_counts_above="2") or m["accuracy"].update(threshold="2"))
    _fails(path, "every key")
    path = _copy(good, tmp_path / "f")  # hypothesis finding: a zero denominator was caught only generically
    _reseal(path, lambda m: m["compact"]["counting_mechanism"]["exp_eps"].update(den="0x0"))
    _fails(path, "exp_eps.den must be a positive integer")


def _rewrite(path: Path, table_or_batches, schema: pa.Schema) -> None:
    with pa.OSFile(str(path / "coefficients.arrow"), "wb") as sink, ipc.new_file(sink, schema) as writer:
        for batch in table_or_batches:
            writer.write_batch(batch)
    _relist(path)


def test_valid_arrow_files_that_break_the_layout(good: Path, tmp_path: Path, release) -> None:
    width = release.m // 8
    good_schema = ipc.open_file(pa.memory_map(str(good / "coefficients.arrow"))).schema
    data = pa.py_buffer(np.zeros(21 * width, dtype=np.uint8).tobytes())
    arr = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), 21, [None, data])
    path = _copy(good, tmp_path / "one-batch")  # 21 rows in one batch where the manifest says batches of 8
    _rewrite(path, [pa.record_batch([arr], schema=good_schema)], good_schema)
    _fails(path, "coefficients.arrow", "record batches")
    path = _copy(good, tmp_path / "schema")
    other = pa.schema([pa.field("coefficient", pa.binary(width))], metadata=good_schema.metadata)
    _rewrite(path, [pa.record_batch([arr.slice(0, 8)], schema=other)] * 2 + [pa.record_batch([arr.slice(0, 5)], schema=other)], other)
    _fails(path, "coefficients.arrow", "non-nullable")
    path = _copy(good, tmp_path / "meta")
    meta = dict(good_schema.metadata)
    meta[b"dpspark.m"] = b"128"
    third = good_schema.with_metadata(meta)
    _rewrite(path, [pa.record_batch([arr.slice(0, 8)], schema=third)] * 2 + [pa.record_batch([arr.slice(0, 5)], schema=third)], third)
    _fails(path, "coefficients.arrow", "metadata")
    path = _copy(good, tmp_path / "short")
    _rewrite(path, [pa.record_batch([arr.slice(0, 8)], schema=good_schema)] * 2 + [pa.record_batch([arr.slice(0, 4)], schema=good_schema)], good_schema)
    _fails(path, "coefficients.arrow")


def test_writer_rejects_bad_arrays(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_coefficient_file(tmp_path / "x.arrow", np.zeros((3, 2), dtype=np.uint64), 64)
    with pytest.raises(ValueError):
        write_coefficient_file(tmp_path / "x.arrow", np.zeros((0, 1), dtype=np.uint64), 64)


# ---- fuzzing: only ReleaseFormatError may come out ------------------------------------------------

def _only_format_errors(path: Path, **kwargs: Any) -> None:
    try:
        open_release(path, **kwargs)
    except ReleaseFormatError as err:
        assert "invalid manifest (" not in str(err), f"an explicit check is missing: {err}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_coefficient_bytes_resealed(good: Path, data: st.DataObject) -> None:
    raw = bytearray((good / "coefficients.arrow").read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["flip", "delete", "insert"]))
        if op == "flip":
            raw[pos] ^= data.draw(st.integers(1, 255))
        elif op == "delete":
            del raw[pos]
        else:
            raw.insert(pos, data.draw(st.integers(0, 255)))
    with tempfile.TemporaryDirectory() as tmp:
        path = _copy(good, Path(tmp))
        (path / "coefficients.arrow").write_bytes(bytes(raw))
        _relist(path)  # the checksum passes, so the Arrow reader and the layout checks run
        _only_format_errors(path)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, prefix + (k,)))
    return out


def _set(obj: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    obj[path[0]] = _set(obj[path[0]], path[1:], value)
    return obj


_json = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=12) | st.sampled_from(
    ["0", "1", "0x0", "0xff", "-1", "1/2", "64", "128", "rounded-cdf", "block", "GeoSample", "FastSample"]
) | st.dictionaries(st.text(max_size=6), st.integers(0, 9), max_size=2)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_compact_section_resealed(good: Path, data: st.DataObject) -> None:
    manifest = json.loads((good / "manifest.json").read_text())
    manifest.pop("manifest_sha256")
    where = data.draw(st.sampled_from([p for p in _paths(manifest["compact"], ("compact",)) if len(p) > 1]))
    mutated = _set(manifest, where, data.draw(_json))
    try:
        sealed = seal_manifest(mutated)
    except (ValueError, TypeError):
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = _copy(good, Path(tmp))
        (path / "manifest.json").write_bytes(sealed)
        _only_format_errors(path)
