"""Universe spec parsing: round trips and every configuration error path."""

from __future__ import annotations

import json

import pytest

from dpspark.universe import (
    BytesUniverse,
    CategoricalUniverse,
    HashedUniverse,
    IntRangeUniverse,
    OutOfUniverseError,
    StringUniverse,
    TupleUniverse,
    UniverseConfigError,
    universe_from_dict,
    values_sha256,
)

ROUND_TRIP_SPECS = [
    {"kind": "int_range", "column": "age", "lo": 0, "hi": 120},
    {"kind": "int_range", "lo": -(1 << 63), "hi": (1 << 63) - 1},
    {"kind": "int_range", "lo": str(-(1 << 200)), "hi": str(1 << 200)},
    {"kind": "categorical", "column": "country", "values": ["DE", "FR", "é", ""]},
    {"kind": "categorical", "values": [3, -1, 1 << 62]},
    {"kind": "bytes", "max_bytes": 0},
    {"kind": "bytes", "column": "b", "max_bytes": 31},
    {"kind": "string", "column": "s", "max_bytes": 15},
    {"kind": "hashed", "column": "user", "bits": 128, "key_type": "string"},
    {"kind": "hashed", "bits": 256, "key_type": "int"},
    {
        "kind": "tuple",
        "components": [
            {"kind": "categorical", "column": "c", "values": ["x", "y"]},
            {"kind": "int_range", "column": "a", "lo": 1, "hi": 7},
            {"kind": "hashed", "column": "h", "bits": 20, "key_type": "bytes"},
        ],
    },
]


@pytest.mark.parametrize("spec", ROUND_TRIP_SPECS, ids=lambda s: s["kind"])
def test_round_trip_is_identity_and_json_serialisable(spec):
    u = universe_from_dict(spec)
    d = u.to_dict()
    assert d == spec
    assert json.loads(json.dumps(d)) == d
    assert universe_from_dict(d) == u


def test_to_dict_is_canonical():
    a = universe_from_dict({"kind": "int_range", "lo": "5", "hi": "9"})
    b = universe_from_dict({"hi": 9, "lo": 5, "kind": "int_range"})
    assert a == b and a.to_dict() == b.to_dict() == {"kind": "int_range", "lo": 5, "hi": 9}
    assert list(a.to_dict()) == ["kind", "lo", "hi"]


def test_categorical_file_round_trip(tmp_path):
    (tmp_path / "countries.txt").write_text("DE\nFR\nÉire\n", encoding="utf-8")
    u = universe_from_dict({"kind": "categorical", "column": "c", "file": "countries.txt"}, base_dir=tmp_path)
    assert u.values == ("DE", "FR", "Éire")
    d = u.to_dict()
    assert d == {
        "kind": "categorical",
        "column": "c",
        "file": "countries.txt",
        "value_type": "string",
        "count": 3,
        "sha256": values_sha256(("DE", "FR", "Éire")),
    }
    assert universe_from_dict(d, base_dir=tmp_path) == u
    # the digest pins the list: a changed file is refused
    (tmp_path / "countries.txt").write_text("DE\nFR\nEire\n", encoding="utf-8")
    with pytest.raises(UniverseConfigError, match="sha256"):
        universe_from_dict(d, base_dir=tmp_path)


def test_categorical_int_file_and_missing_final_newline(tmp_path):
    (tmp_path / "v.txt").write_text("10\n-3\n7", encoding="utf-8")
    u = universe_from_dict({"kind": "categorical", "file": str(tmp_path / "v.txt"), "value_type": "int"})
    assert u.values == (10, -3, 7) and u.encode(-3) == 2


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"kind": "nope"}, r"unknown universe kind 'nope' \(expected one of: bytes, categorical, hashed"),
        ({"lo": 1, "hi": 2}, "missing 'kind'"),
        (
            {"kind": "int_range", "column": "age", "lo": 0},
            r"int_range universe for column 'age': missing required field\(s\) 'hi'",
        ),
        ({"kind": "hashed", "bits": 8}, r"missing required field\(s\) 'key_type'"),
        ({"kind": "bytes"}, "'max_bytes'"),
        ({"kind": "tuple"}, "'components'"),
        ({"kind": "int_range", "lo": 0, "hi": 1, "max": 3}, r"unknown field\(s\) 'max'"),
        ({"kind": "int_range", "lo": 5, "hi": 3}, r"lo \(5\) > hi \(3\)"),
        ({"kind": "int_range", "lo": 1.5, "hi": 3}, "lo must be an integer"),
        ({"kind": "int_range", "lo": "0x10", "hi": 3}, "lo must be an integer"),
        ({"kind": "int_range", "lo": True, "hi": 3}, "lo must be an integer"),
        ({"kind": "categorical", "column": "c", "values": ["a", "b", "a"]}, "duplicate value: entries 1 and 3"),
        ({"kind": "categorical", "values": [1, 2, 1]}, "duplicate value: entries 1 and 3"),
        ({"kind": "categorical", "values": []}, "at least one value"),
        ({"kind": "categorical", "values": ["a", 1]}, "all strings or all integers"),
        ({"kind": "categorical", "values": [1 << 63]}, "64-bit"),
        ({"kind": "categorical", "values": "abc"}, "values must be a list"),
        ({"kind": "categorical"}, "exactly one of 'values' or 'file'"),
        ({"kind": "categorical", "values": ["a"], "value_type": "string"}, "only apply with 'file'"),
        ({"kind": "string", "max_bytes": -1}, "non-negative"),
        ({"kind": "hashed", "bits": 0, "key_type": "int"}, "positive"),
        ({"kind": "hashed", "bits": 8, "key_type": "float"}, "key_type must be one of string, bytes, int"),
        ({"kind": "int_range", "column": "", "lo": 0, "hi": 1}, "column must be a non-empty string"),
        (
            {"kind": "tuple", "components": [{"kind": "tuple", "components": []}]},
            "component 1 is a tuple; nested tuples are not allowed",
        ),
        ({"kind": "tuple", "components": []}, "at least one component"),
        ({"kind": "tuple", "components": {"kind": "bytes"}}, "components must be a list"),
        (
            {
                "kind": "tuple",
                "components": [
                    {"kind": "bytes", "column": "x", "max_bytes": 1},
                    {"kind": "bytes", "column": "x", "max_bytes": 1},
                ],
            },
            "component columns must be distinct",
        ),
        ("not a mapping", "must be a table/mapping"),
    ],
)
def test_config_errors(spec, message):
    with pytest.raises(UniverseConfigError, match=message):
        universe_from_dict(spec)


def test_config_error_is_a_value_error():
    assert issubclass(UniverseConfigError, ValueError) and issubclass(OutOfUniverseError, ValueError)


@pytest.mark.parametrize(
    "spec, ok_spec, name",
    [
        (
            {"kind": "int_range", "column": "big", "lo": 0, "hi": str(1 << 256)},
            {"kind": "int_range", "column": "big", "lo": 1, "hi": str(1 << 256)},
            "int_range universe for column 'big'",
        ),
        ({"kind": "bytes", "max_bytes": 32}, {"kind": "bytes", "max_bytes": 31}, "bytes universe"),
        ({"kind": "string", "column": "s", "max_bytes": 10**9}, {"kind": "string", "max_bytes": 31}, "string universe"),
        ({"kind": "hashed", "bits": 257, "key_type": "int"}, {"kind": "hashed", "bits": 256, "key_type": "int"}, "hashed"),
    ],
)
def test_size_above_2_256_is_refused_and_names_the_universe(spec, ok_spec, name):
    with pytest.raises(UniverseConfigError, match=f"{name}.*above the maximum of 2\\^256"):
        universe_from_dict(spec)
    assert universe_from_dict(ok_spec).size <= 1 << 256


def test_tuple_size_above_2_1024_is_refused_and_names_the_universe():
    """Tuple universes go to 2^1024 (issue 34 §5: 96-byte words for three 31-byte strings), not beyond."""
    parts = [{"kind": "hashed", "column": c, "bits": 256, "key_type": "int"} for c in "abcd"]
    assert universe_from_dict({"kind": "tuple", "components": parts}).index_width == 128
    over = parts + [{"kind": "hashed", "column": "e", "bits": 1, "key_type": "int"}]
    with pytest.raises(UniverseConfigError, match=r"tuple universe over \(a, b, c, d, e\).*above the maximum of 2\^1024"):
        universe_from_dict({"kind": "tuple", "components": over})


def test_size_boundaries_and_index_width():
    assert IntRangeUniverse(1, 1 << 256).size == 1 << 256
    assert IntRangeUniverse(1, 1 << 128).index_width == 16
    assert IntRangeUniverse(0, 1 << 128).index_width == 32
    assert StringUniverse(15).index_width == 16 and StringUniverse(16).index_width == 32
    assert BytesUniverse(31).size == ((1 << 256) - 1) // 255
    assert HashedUniverse(128, "string").index_width == 16
    assert HashedUniverse(129, "string").index_width == 32
    t = TupleUniverse((HashedUniverse(64, "int", "a"), HashedUniverse(64, "int", "b")))
    assert t.size == 1 << 128 and t.index_width == 16


@pytest.mark.parametrize(
    "content, message",
    [
        (b"a\n\nb\n", "line 2 is blank"),
        (b"a\r\nb\n", "line 1 contains a carriage return"),
        (b"a\n\xff\n", "not valid UTF-8"),
        (b"a\nb\na\n", "duplicate value: entries 1 and 3"),
    ],
)
def test_categorical_file_errors(tmp_path, content, message):
    path = tmp_path / "values.txt"
    path.write_bytes(content)
    with pytest.raises(UniverseConfigError, match=message):
        universe_from_dict({"kind": "categorical", "file": str(path)})


def test_categorical_file_other_errors(tmp_path):
    with pytest.raises(UniverseConfigError, match="cannot read values file"):
        universe_from_dict({"kind": "categorical", "file": str(tmp_path / "missing.txt")})
    (tmp_path / "v.txt").write_text("1\nx\n")
    with pytest.raises(UniverseConfigError, match="line 2 is not a decimal integer"):
        universe_from_dict({"kind": "categorical", "file": str(tmp_path / "v.txt"), "value_type": "int"})
    with pytest.raises(UniverseConfigError, match="value_type must be one of"):
        universe_from_dict({"kind": "categorical", "file": str(tmp_path / "v.txt"), "value_type": "float"})
    (tmp_path / "w.txt").write_text("a\nb\n")
    with pytest.raises(UniverseConfigError, match="values file has 2 values, spec says 3"):
        universe_from_dict({"kind": "categorical", "file": str(tmp_path / "w.txt"), "count": 3})
    assert CategoricalUniverse.from_file(tmp_path / "w.txt", column="c").values == ("a", "b")
