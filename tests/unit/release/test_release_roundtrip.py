"""Round trips: a hand-built HistogramRelease for every universe kind, written and reopened."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark import __version__
from dpspark.lookup import open_release
from dpspark.release import read_manifest
from dpspark.mechanisms.histogram.files import offset_keys
from dpspark.mechanisms.histogram.layout import bins_columns
from dpspark.universe import (
    BytesUniverse,
    CategoricalUniverse,
    HashedUniverse,
    IntRangeUniverse,
    StringUniverse,
    TupleUniverse,
    index_from_bytes,
)
from tests.support.release_support import CONFIG, INPUT, hand_release, write


def _random_indices(size: int, k: int, seed: int) -> list[int]:
    gen = np.random.default_rng(seed)  # test-input generation only
    picks = {int(x) % size + 1 for x in gen.integers(0, 2**62, size=4 * k)}
    if size > 2**62:
        picks |= {size, size - 1, 1 << 100}
    return sorted(picks)[:k] if size > 2 * k else sorted(picks)[::2]


def _decodable(u, i):
    try:
        return u.decode(i)
    except ValueError:
        return None


CASES = {
    "int_range": (IntRangeUniverse(-50, 1000, "age"), ["age"]),
    "int_range_uint64": (IntRangeUniverse(0, 2**64 - 1, "id"), ["id"]),
    "int_range_wide": (IntRangeUniverse(-(2**100), 2**100, "big"), ["big"]),
    "categorical_str": (CategoricalUniverse(("DE", "FR", "IT", "ES", "a,b", ""), "country"), ["country"]),
    "categorical_int": (CategoricalUniverse(tuple(range(-5, 40, 3)), "code"), ["code"]),
    "bytes": (BytesUniverse(3, "blob"), ["blob"]),
    "string": (StringUniverse(2, "city"), ["city"]),
    "string_wide": (StringUniverse(20, "name"), ["name"]),
    "tuple": (TupleUniverse((IntRangeUniverse(0, 120, "age"), StringUniverse(2, "city"))), ["age", "city"]),
    "tuple_mixed": (
        TupleUniverse((CategoricalUniverse((1, 2, 3), "k"), BytesUniverse(1, "b"), IntRangeUniverse(5, 9, "z"))),
        ["k", "b", "z"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_roundtrip_decodable_universes(tmp_path: Path, case: str) -> None:
    universe, cols = CASES[case]
    indices = _random_indices(universe.size, 40, seed=len(case))
    counts = [(7 * i) % 101 for i in range(len(indices))]
    shuffled = list(zip(indices, counts))[::-1]  # the writer must sort canonically
    release = hand_release(universe, [i for i, _ in shuffled], [c for _, c in shuffled])
    path = write(tmp_path, universe, cols, release)

    table = pq.read_table(path / "bins.parquet")
    assert table.schema.names == [c.name for c in bins_columns(universe, cols)]
    stored = [index_from_bytes(w) for w in table.column("index").to_pylist()]
    assert stored == indices  # canonical: universe index ascending
    assert table.column("noisy_count").to_pylist() == counts
    assert table.column("noisy_count").type == pa.int64()

    rel = open_release(path)
    assert len(rel) == len(indices)
    keys = [(i, k, c) for i, c in zip(indices, counts) if (k := _decodable(universe, i)) is not None]
    assert keys, "every case has decodable keys"
    for _, key, c in keys:
        assert rel.count(key) == c
    got = rel.counts([k for _, k, _ in keys])
    assert got.dtype == np.int64 and got.tolist() == [c for _, _, c in keys]
    # a key whose bin was not released reads 0
    absent = next(i for i in range(1, universe.size + 1) if i not in set(indices) and _decodable(universe, i) is not None)
    assert rel.count(universe.decode(absent)) == 0


def test_key_columns_decode_to_the_universe_keys(tmp_path: Path) -> None:
    universe, cols = CASES["tuple"]
    indices = _random_indices(universe.size, 60, seed=3)
    path = write(tmp_path, universe, cols, hand_release(universe, indices, [1] * len(indices)))
    table = pq.read_table(path / "bins.parquet")
    for row, i in zip(table.to_pylist(), indices):
        age, city_bytes = row["age"], row["city__bytes"]
        assert (age, city_bytes) == (universe.components[0].decode(universe_comp_index(universe, i, 0)),
                                     BytesUniverse(2).decode(universe_comp_index(universe, i, 1)))
        try:
            text = city_bytes.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        assert row["city"] == text  # null exactly where the bytes are not UTF-8


def universe_comp_index(universe: TupleUniverse, index: int, j: int) -> int:
    off = index - 1
    for k, m in enumerate(universe.multipliers):
        q, off = divmod(off, m)
        if k == j:
            return q + 1
    raise AssertionError


def test_string_universe_invalid_utf8_is_null(tmp_path: Path) -> None:
    u = StringUniverse(2, "s")
    good = u.encode("é")
    bad = BytesUniverse(2).encode(b"\xff\xfe")  # same shortlex numbering, not valid UTF-8
    path = write(tmp_path, u, ["s"], hand_release(u, sorted([good, bad]), [5, 6]))
    rows = pq.read_table(path / "bins.parquet").to_pylist()
    by_bytes = {r["s__bytes"]: r["s"] for r in rows}
    assert by_bytes == {"é".encode(): "é", b"\xff\xfe": None}


@pytest.mark.parametrize("bits", [64, 128])
def test_hashed_universe_with_top_index(tmp_path: Path, bits: int) -> None:
    u = HashedUniverse(bits, "string", "user")
    keys = [f"user-{k}" for k in range(30)]
    idx = {u.encode(k): k for k in keys}
    top = 1 << bits  # at 128 bits stored as the all-zero word: must still sort last and be found
    indices = sorted(set(idx) | {top, 1})
    counts = [i % 97 for i in range(len(indices))]
    path = write(tmp_path, u, ["user"], hand_release(u, indices, counts))
    table = pq.read_table(path / "bins.parquet")
    words = table.column("index").to_pylist()
    assert [index_from_bytes(w) for w in words] == indices
    assert words[-1] == (bytes(16) if bits == 128 else (1 << 64).to_bytes(16, "big"))
    assert table.column("user__hash_bin").to_pylist() == words
    rel = open_release(path)
    expected = dict(zip(indices, counts))
    assert rel.counts(keys).tolist() == [expected[u.encode(k)] for k in keys]
    assert rel.count("not-a-released-user") == expected.get(u.encode("not-a-released-user"), 0)
    assert "collide" in rel.estimate(keys[0]).condition
    # the offset keys (index - 1; uint64 up to 2^64 elements) sort the top index last
    keys_sorted = offset_keys(table.column("index").combine_chunks(), 16, u.size)
    assert keys_sorted.dtype == (np.uint64 if bits == 64 else np.dtype("S16"))
    assert list(keys_sorted) == sorted(keys_sorted) and len(set(keys_sorted.tolist())) == len(indices)


def test_categorical_value_file_is_copied_into_the_release(tmp_path: Path) -> None:
    values = tmp_path / "countries.txt"
    values.write_text("DE\nFR\nIT\n", encoding="utf-8")
    u = CategoricalUniverse.from_file(values, column="country")
    path = write(tmp_path, u, ["country"], hand_release(u, [1, 3], [10, 30]))
    values.unlink()  # the release must not depend on the original file
    m = read_manifest(path)
    assert m.universe_spec["file"] == "universe-values-1.txt"
    assert "universe-values-1.txt" in m.files
    rel = open_release(path)
    assert rel.counts(["DE", "FR", "IT"]).tolist() == [10, 0, 30]


def test_manifest_contents(tmp_path: Path) -> None:
    u = IntRangeUniverse(0, 999, "age")
    release = hand_release(u, [3, 500], [40, 41], n=777)
    path = write(tmp_path, u, ["age"], release)
    raw = json.loads((path / "manifest.json").read_text())
    m = read_manifest(path)
    assert raw["schema_version"] == 1 and raw["kind"] == "sparse" and raw["dpspark_version"] == __version__
    assert raw["max_units"] == "777" and m.max_units == 777
    assert raw["mechanism"]["epsilon"] == "1/2" and raw["mechanism"]["delta"] == "1/1099511627776"
    assert raw["mechanism"]["epsilon_tilde"]["exp"] == "41/32"
    assert raw["universe"] == u.to_dict() and raw["universe_size"] == "1000"
    assert raw["input"] == INPUT and raw["config"] == CONFIG
    assert raw["rng"] == {"name": "seeded-shake256 (TEST ONLY)", "test_only": True}
    assert raw["accuracy"]["threshold"] == "12" and m.accuracy.per_query_above == 12
    # replacement = two add/remove steps: exp eps squared, bias doubled, delta (1 + e^eps) delta bound
    p = release.privacy
    assert m.add_remove.exp_eps == p.exp_eps and m.add_remove.delta == p.delta
    assert m.replacement.exp_eps == p.exp_eps**2
    assert m.replacement.bias_epsilon == 2 * p.bias_epsilon
    assert m.replacement.delta == (1 + p.exp_eps / (1 - p.bias_epsilon)) * p.delta
    assert m.replacement.delta > (1 + p.exp_eps) * p.delta  # a true upper bound on (1 + e^eps) delta
    # nothing data-dependent: neither the number of bins nor any count appears
    text = (path / "manifest.json").read_text()
    assert '"41"' not in text and "released_bins" not in text and "rows" not in text
    assert set(m.files) == {"bins.parquet"}


def test_huge_delta_denominator_is_hex(tmp_path: Path) -> None:
    u = IntRangeUniverse(0, 99)
    delta = Fraction(1, 3**20000)  # ~31700 bits: beyond Python's 4300-digit str() limit
    path = write(tmp_path, u, ["v"], hand_release(u, [1], [5], delta=delta))
    raw = json.loads((path / "manifest.json").read_text())
    assert raw["privacy"]["add_remove"]["delta"].startswith("1/0x")
    assert read_manifest(path).add_remove.delta == delta


def test_seeded_and_system_rng_names_are_recorded(tmp_path: Path) -> None:
    u = IntRangeUniverse(0, 9)
    path = write(tmp_path, u, ["v"], hand_release(u, [2], [3]), rng_name="os.urandom")
    m = read_manifest(path)
    assert m.rng_name == "os.urandom" and not m.rng_test_only
    assert "TEST-ONLY" not in open_release(path).privacy


def test_writer_rejects_bad_releases(tmp_path: Path) -> None:
    u = IntRangeUniverse(0, 9)
    with pytest.raises(ValueError, match="twice"):
        write(tmp_path, u, ["v"], hand_release(u, [2, 2], [3, 4]))
    with pytest.raises(ValueError, match=r"outside \[0, n\]"):
        write(tmp_path, u, ["v"], hand_release(u, [2], [101]))
    with pytest.raises(ValueError, match="outside"):
        write(tmp_path, u, ["v"], hand_release(u, [11], [1]))
    with pytest.raises(ValueError, match="clash"):
        write(tmp_path, u, ["index"], hand_release(u, [1], [1]))
    with pytest.raises(TypeError, match="float"):
        write(tmp_path, u, ["v"], hand_release(u, [1], [1]), config={"epsilon": 0.5})
    assert not any(tmp_path.iterdir())  # nothing was written by any of them
