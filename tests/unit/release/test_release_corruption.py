"""Hardened readers: damaged, mismatched, wrong-version and oversized releases give ReleaseFormatError."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpspark.lookup import open_release
from dpspark.release import ReadLimits, ReleaseFormatError, parse_manifest
from dpspark.release import files as release_files
from dpspark.release.manifest import seal_manifest
from dpspark.release.schema import SchemaViolation, validate
from dpspark.universe import CategoricalUniverse, IntRangeUniverse, TupleUniverse
from tests.support.release_support import hand_release, write

U = TupleUniverse((IntRangeUniverse(0, 99, "age"), CategoricalUniverse(("a", "b", "c"), "grp")))


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("good")
    return write(root, U, ["age", "grp"], hand_release(U, [1, 5, 17, 299], [10, 20, 30, 40]))


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


def _fails(path: Path, *fragments: str, **kwargs: Any) -> str:
    with pytest.raises(ReleaseFormatError) as info:
        open_release(path, **kwargs)
    msg = str(info.value)
    for f in fragments:
        assert f in msg, msg
    return msg


def test_good_release_opens(good: Path) -> None:
    assert open_release(good).counts([(0, "a"), (1, "b"), (99, "b")]).tolist() == [10, 20, 40]


def test_truncated_bins(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    data = (path / "bins.parquet").read_bytes()
    (path / "bins.parquet").write_bytes(data[: len(data) // 2])
    _fails(path, "bins.parquet", "truncated")
    _fails(path, "bins.parquet", "truncated", verify=False)  # the size check needs no checksum


@pytest.mark.parametrize("where", [0, 100, -9, -1])
def test_bit_flipped_bins(good: Path, tmp_path: Path, where: int) -> None:
    path = _copy(good, tmp_path)
    data = bytearray((path / "bins.parquet").read_bytes())
    data[where] ^= 0x10
    (path / "bins.parquet").write_bytes(bytes(data))
    _fails(path, "bins.parquet", "sha256 mismatch")


def test_truncated_manifest(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    data = (path / "manifest.json").read_bytes()
    for cut in (0, 1, len(data) // 2, len(data) - 3):
        (path / "manifest.json").write_bytes(data[:cut])
        _fails(path, "manifest.json")


def test_every_single_bit_flip_of_the_manifest_is_detected(good: Path) -> None:
    data = (good / "manifest.json").read_bytes()
    for pos in range(len(data)):
        flipped = bytearray(data)
        flipped[pos] ^= 1 << (pos % 8)
        with pytest.raises(ReleaseFormatError, match="manifest.json"):
            parse_manifest(bytes(flipped), "manifest.json")


def test_hex_case_change_that_parses_identically_is_detected(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    text = (path / "manifest.json").read_text()
    assert '"format": "dpspark-release"' in text
    # \u0064 parses to "d": same JSON value, different bytes
    (path / "manifest.json").write_text(text.replace('"dpspark-release"', '"\\u0064pspark-release"', 1))
    _fails(path, "checksum mismatch")


def test_wrong_schema_version(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m.update(schema_version=2))
    _fails(path, "manifest.json", "schema version 2 is not supported", "reads version 1")


def test_not_a_manifest(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    (path / "manifest.json").write_text('{"hello": 1}')
    _fails(path, "not a dpspark release manifest")
    (path / "manifest.json").write_text("[1, 2]")
    _fails(path, "must be a JSON object")
    (path / "manifest.json").write_text('{"a": NaN}')
    _fails(path, "not valid JSON")
    (path / "manifest.json").write_bytes(b"\xff\xfe{}")
    _fails(path, "not valid UTF-8")
    (path / "manifest.json").write_text("[" * 100000 + "]" * 100000)
    _fails(path, "manifest.json")


def test_sha_mismatch_declared(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m["files"]["bins.parquet"].update(sha256="0" * 64))
    _fails(path, "bins.parquet", "sha256 mismatch")
    assert open_release(path, verify=False).count((0, "a")) == 10  # verify=False trusts the file


def test_missing_files(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    (path / "bins.parquet").unlink()
    _fails(path, "bins.parquet", "missing")
    (path / "manifest.json").unlink()
    _fails(path, "manifest.json", "missing")
    _fails(tmp_path / "nowhere", "not a release directory")


def test_unlisted_bins_file(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m["files"].pop("bins.parquet"))
    _fails(path, "not listed under files")


def test_wrong_size_declared(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    size = (path / "bins.parquet").stat().st_size
    _reseal(path, lambda m: m["files"]["bins.parquet"].update(bytes=str(size + 1)))
    _fails(path, "bins.parquet", f"manifest says {size + 1}")


def test_absurd_declared_size_is_rejected_before_reading(good: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m["files"]["bins.parquet"].update(bytes=str(10**12)))

    def no_reading(*a, **k):
        raise AssertionError("a file was read despite an absurd declared size")

    monkeypatch.setattr(release_files, "sha256_file", no_reading)
    _fails(path, "declares 1000000000000 bytes", "above the limit")


def test_absurd_numbers_and_lists(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m.update(universe_size="9" * 100))
    _fails(path, "universe_size")
    path2 = _copy(good, tmp_path / "b")
    _reseal(path2, lambda m: m["files"].update({f"f{i}": {"sha256": "0" * 64, "bytes": "1"} for i in range(2000)}))
    _fails(path2, "files")


def test_huge_exact_numbers_are_refused_before_arithmetic(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    a, b = (1 << (1 << 21)) - 1, (1 << (1 << 21)) - 3  # gcd of such parts would take about 20 s
    _reseal(path, lambda m: m["privacy"]["add_remove"].update(delta=f"{hex(a)}/{hex(b)}"))
    start = time.perf_counter()
    _fails(path, "privacy.add_remove.delta", "above 1048576 bits")
    assert time.perf_counter() - start < 5
    _reseal(path, lambda m: m["mechanism"]["epsilon_tilde"].update(exp=hex(1 << 5000)))
    _fails(path, "mechanism.epsilon_tilde.exp", "above 4096 bits")


def test_row_and_manifest_limits(good: Path) -> None:
    _fails(good, "declares 4 rows, above the limit of 3", limits=ReadLimits(max_rows=3))
    _fails(good, "above the limit of 100 bytes", limits=ReadLimits(max_manifest_bytes=100))


def test_universe_tampering(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m["universe"]["components"][0].update(hi=98))
    _fails(path, "universe_size differs")
    path2 = _copy(good, tmp_path / "b")
    _reseal(path2, lambda m: m["universe"].update(kind="nonsense"))
    _fails(path2, "invalid universe spec")
    path3 = _copy(good, tmp_path / "c")
    _reseal(path3, lambda m: m["universe"]["components"][1].update(file="../../etc/passwd") or
            m["universe"]["components"][1].pop("values"))
    _fails(path3, "not a listed data file")


def _rewrite_bins(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path / "bins.parquet")
    data = (path / "bins.parquet").read_bytes()
    import hashlib

    _reseal(path, lambda m: m["files"]["bins.parquet"].update(bytes=str(len(data)), sha256=hashlib.sha256(data).hexdigest()))


def test_bins_out_of_order(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    table = pq.read_table(path / "bins.parquet")
    _rewrite_bins(path, table.take([1, 0, 2, 3]))
    _fails(path, "not strictly ascending")


def test_bins_duplicate_and_range(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    table = pq.read_table(path / "bins.parquet")
    _rewrite_bins(path, table.take([0, 0, 2, 3]))
    _fails(path, "not strictly ascending")
    counts = pa.array([10, 20, 30, 101], pa.int64())
    _rewrite_bins(path, table.set_column(table.schema.get_field_index("noisy_count"), table.schema.field("noisy_count"), counts))
    _fails(path, "outside [0, n]")


def test_bins_wrong_schema(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    table = pq.read_table(path / "bins.parquet")
    _rewrite_bins(path, table.drop_columns(["grp"]))
    _fails(path, "columns or types differ")
    _rewrite_bins(path, pa.table({"x": [1]}))
    _fails(path, "columns or types differ")


def test_bins_not_parquet_but_checksummed(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    (path / "bins.parquet").write_bytes(b"not parquet at all")
    import hashlib

    _reseal(path, lambda m: m["files"]["bins.parquet"].update(bytes="18", sha256=hashlib.sha256(b"not parquet at all").hexdigest()))
    _fails(path, "bins.parquet", "not a readable Parquet file")


def test_fifo_never_hangs(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    (path / "bins.parquet").unlink()
    os.mkfifo(path / "bins.parquet")
    _fails(path, "not a regular file")
    (path / "manifest.json").unlink()
    os.mkfifo(path / "manifest.json")
    _fails(path, "not a regular file")


def test_sparse_manifest_relabelled_compact_is_refused(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m.update(kind="compact"))
    _fails(path, "compact")  # schema: compact requires its own section
    _reseal(path, lambda m: m.update(compact={}))
    _fails(path, "compact")  # schema: the section's fields are required
    _reseal(path, lambda m: m.update(kind="sparse"))
    _fails(path, "compact")  # a sparse release has no compact section


def test_inconsistent_privacy_statement(good: Path, tmp_path: Path) -> None:
    path = _copy(good, tmp_path)
    _reseal(path, lambda m: m["privacy"]["replacement"].update(delta="0"))
    _fails(path, "'pure' contradicts delta")
    _reseal(path, lambda m: m["privacy"]["replacement"].update(delta="1/3", pure=False))
    _fails(path, "group-privacy statement")
    _reseal(path, lambda m: m["rng"].update(test_only=False))
    _fails(path, "test_only")


def test_schema_file_uses_only_supported_keywords() -> None:
    from dpspark.release.schema import _KNOWN, manifest_schema

    def walk(node: Any, in_properties: bool = False) -> None:
        if isinstance(node, dict):
            if not in_properties:
                assert set(node) <= _KNOWN, set(node) - _KNOWN
            for key, value in node.items():
                if key in ("properties", "$defs"):
                    for sub in value.values():
                        walk(sub)
                elif key in ("items", "additionalProperties", "propertyNames", "if", "then"):
                    walk(value)
                elif key == "allOf":
                    for sub in value:
                        walk(sub)

    schema = manifest_schema()
    walk(schema)
    assert schema["properties"]["kind"]["enum"] == ["sparse", "compact"]


def test_schema_validator_basics() -> None:
    schema = {
        "type": "object", "required": ["a"], "additionalProperties": False,
        "properties": {"a": {"type": "string", "pattern": "^[0-9]+$"}, "b": {"enum": [16, 32]}},
    }
    validate({"a": "12", "b": 16}, schema)
    for bad in ({"a": "12\n"}, {"a": 12}, {}, {"a": "1", "c": 0}, {"a": "1", "b": True}, {"a": "1", "b": 17}):
        with pytest.raises(SchemaViolation):
            validate(bad, schema)
    with pytest.raises(TypeError, match="unsupported keyword"):
        validate({}, {"oneOf": []})


# ---- fuzzing the manifest reader: it may only ever raise ReleaseFormatError ------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, prefix + (i,)))
    return out


def _set(obj: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    obj[path[0]] = _set(obj[path[0]], path[1:], value)
    return obj


def _only_format_errors(data: bytes) -> None:
    try:
        parse_manifest(data, "manifest.json")
    except ReleaseFormatError as err:
        assert "manifest.json" in str(err)
        assert "invalid manifest (" not in str(err), f"an explicit check is missing: {err}"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(data: bytes) -> None:
    _only_format_errors(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_byte_mutations(good: Path, data: st.DataObject) -> None:
    raw = bytearray((good / "manifest.json").read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["flip", "delete", "insert"]))
        if op == "flip":
            raw[pos] ^= data.draw(st.integers(1, 255))
        elif op == "delete":
            del raw[pos]
        else:
            raw.insert(pos, data.draw(st.integers(0, 255)))
    _only_format_errors(bytes(raw))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_structural_mutations_resealed(good: Path, data: st.DataObject) -> None:
    # resealed, so the checksum passes and the schema and semantic checks are exercised
    manifest = json.loads((good / "manifest.json").read_text())
    manifest.pop("manifest_sha256")
    path = data.draw(st.sampled_from(_paths(manifest)))
    mutated = _set(manifest, path, data.draw(_json))
    if not isinstance(mutated, dict):
        mutated = {"format": "dpspark-release", "schema_version": 1, "x": mutated}
    try:
        sealed = seal_manifest(mutated)
    except (ValueError, TypeError):
        return  # not representable by the writer
    _only_format_errors(sealed)
    # and the whole reader (universe, bins layout, bins) on a directory holding it
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "manifest.json").write_bytes(sealed)
        (Path(tmp) / "bins.parquet").write_bytes((good / "bins.parquet").read_bytes())
        try:
            open_release(tmp)
        except ReleaseFormatError as err:
            assert "invalid manifest (" not in str(err), f"an explicit check is missing: {err}"
