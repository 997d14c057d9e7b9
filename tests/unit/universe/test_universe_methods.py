"""What each universe class knows about itself: key kind, text and JSON forms, words, released-key columns."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dpspark.errors import ParameterError
from dpspark.universe import (
    BytesUniverse,
    CategoricalUniverse,
    HashedUniverse,
    IntRangeUniverse,
    StringUniverse,
    TupleUniverse,
    Universe,
)
from dpspark.universe.keytext import split_tuple_key
from dpspark.universe.wide import index_from_bytes, index_to_bytes, index_words

# (universe, key text, the key it parses to, key kind, words)
SCALARS = [
    (IntRangeUniverse(-5, 120, "age"), " 42", 42, "int", "integers -5..120"),
    (CategoricalUniverse(("DE", "FR", "IT"), "c"), "FR", "FR", "string", "3 listed string values"),
    (CategoricalUniverse((7, -3, 11), "n"), "-3", -3, "int", "3 listed int values"),
    (BytesUniverse(4, "b"), "ab", b"ab", "bytes", "byte strings of at most 4 bytes"),
    (StringUniverse(7, "s"), "Zürich", "Zürich", "string", "UTF-8 strings of at most 7 bytes"),
    (HashedUniverse(20, "string", "h"), "x", "x", "string",
     "string keys hashed to 20 bits (SHA-256; colliding keys share a bin)"),
    (HashedUniverse(12, "bytes"), "yz", b"yz", "bytes",
     "bytes keys hashed to 12 bits (SHA-256; colliding keys share a bin)"),
    (HashedUniverse(64, "int"), "-9", -9, "int", "int keys hashed to 64 bits (SHA-256; colliding keys share a bin)"),
]
IDS = [f"{u.kind}-{kind}" for u, _, _, kind, _ in SCALARS]


@pytest.mark.parametrize(("u", "text", "key", "kind", "words"), SCALARS, ids=IDS)
def test_scalar_text_index_words_round_trip(u: Universe, text: str, key: object, kind: str, words: str) -> None:
    assert u.key_kind == kind
    assert u.words == words
    assert u.parts == (u,) and not u.is_tuple
    parsed = u.parse_text(text)
    assert parsed == key and type(parsed) is type(key)
    index = u.encode(parsed)
    assert 1 <= index <= u.size
    if u.is_bijection:
        assert u.decode(index) == key
    else:  # hashed: a lookup re-encodes the key to the same bin
        assert u.encode(u.parse_text(text)) == index


@pytest.mark.parametrize(("u", "text", "key", "kind", "words"), SCALARS, ids=IDS)
def test_scalar_json_forms(u: Universe, text: str, key: object, kind: str, words: str) -> None:
    value = key.decode() if isinstance(key, bytes) else key  # JSON has no bytes: bytes kinds take the text
    assert u.parse_json(value) == key
    assert u.parse_json({"hex": "00ff"}) == b"\x00\xff"  # arbitrary bytes, any kind (the encoder then judges)
    with pytest.raises(ParameterError, match=r'^key: a JSON object key must be \{"hex": "\.\.\."\}$'):
        u.parse_json({"hex": 1})
    with pytest.raises(ParameterError, match=r"^key: invalid hex$"):
        u.parse_json({"hex": "zz"})


def test_int_text_errors_name_the_key_not_its_value() -> None:
    with pytest.raises(ParameterError) as err:
        IntRangeUniverse(0, 9).parse_text("SECRET-7")
    assert str(err.value) == "key: expected a decimal integer"
    with pytest.raises(ParameterError, match="^component 2: expected a decimal integer$"):
        TupleUniverse((StringUniverse(3, "a"), IntRangeUniverse(0, 9, "b"))).parse_text("x,SECRET")


def test_tuple_text_index_words_round_trip() -> None:
    u = TupleUniverse((IntRangeUniverse(0, 99, "age"), StringUniverse(8, "city"), BytesUniverse(2, "tag")))
    assert u.is_tuple and u.parts == u.components
    key = u.parse_text(r"31,a\,b\\c,zz")
    assert key == (31, "a,b\\c", b"zz")
    assert u.decode(u.encode(key)) == key
    assert u.parse_json([31, "a,b\\c", "zz"]) == key
    assert u.words == ("age: integers 0..99; city: UTF-8 strings of at most 8 bytes; "
                       "tag: byte strings of at most 2 bytes")
    assert TupleUniverse((IntRangeUniverse(0, 1), IntRangeUniverse(0, 2))).words == (
        "#1: integers 0..1; #2: integers 0..2")
    with pytest.raises(ParameterError, match="^a tuple key needs 3 comma-separated components, got 2$"):
        u.parse_text("1,2")
    with pytest.raises(ParameterError, match="^--key-json: a tuple key must be a JSON list of 3 values$"):
        u.parse_json([1, "a"])
    with pytest.raises(ParameterError, match="backslash must be followed"):
        u.parse_text(r"1,a\b,c")
    with pytest.raises(TypeError, match="no key type rule for TupleUniverse"):
        u.key_kind  # noqa: B018 - a tuple has one kind per component


def test_split_tuple_key() -> None:
    assert split_tuple_key(r"a,b\,c,") == ["a", "b,c", ""]
    assert split_tuple_key("") == [""]


# ---- released keys as Arrow columns --------------------------------------------------------------------

FIELDS = [
    (IntRangeUniverse(-5, 120), (("", "key", pa.int64()),)),
    (IntRangeUniverse(0, (1 << 64) - 1), (("", "key", pa.uint64()),)),
    (IntRangeUniverse(-1, 1 << 70), (("", "key", pa.string()),)),
    (CategoricalUniverse(("a", "b")), (("", "key", pa.string()),)),
    (CategoricalUniverse((5, 6)), (("", "key", pa.int64()),)),
    (BytesUniverse(3), (("", "key", pa.binary()),)),
    (StringUniverse(3), (("", "key", pa.string()), ("__bytes", "key_bytes", pa.binary()))),
    (HashedUniverse(200, "int"), (("__hash_bin", "key_hash_bin", pa.binary(32)),)),
]


@pytest.mark.parametrize(("u", "fields"), FIELDS, ids=[f"{u.kind}{j}" for j, (u, _) in enumerate(FIELDS)])
def test_key_fields_and_arrays(u: Universe, fields: tuple) -> None:
    assert u.key_fields() == fields
    indexes = [1, 2, min(u.size, 9)]
    arrays = u.key_arrays(indexes)
    assert [a.type for a in arrays] == [t for _, _, t in fields]
    if u.kind == "hashed":
        assert [index_from_bytes(w) for w in arrays[0].to_pylist()] == indexes
    elif u.kind == "int_range" and fields[0][2] == pa.string():
        assert arrays[0].to_pylist() == [str(u.decode(i)) for i in indexes]
    else:
        assert arrays[0].to_pylist() == [u.decode(i) for i in indexes]


def test_string_key_arrays_null_where_not_utf8() -> None:
    u = StringUniverse(1)
    index = BytesUniverse(1).encode(b"\xff")  # a byte string in the universe's range that is no str
    text, raw = u.key_arrays([1, index, u.encode("a")])
    assert text.to_pylist() == ["", None, "a"]
    assert raw.to_pylist() == [b"", b"\xff", b"a"]


def test_tuple_has_no_key_fields() -> None:
    u = TupleUniverse((IntRangeUniverse(0, 1, "a"),))
    with pytest.raises(ValueError, match=r"no bins layout for universe kind 'tuple'"):
        u.key_fields()


def test_index_words_match_index_to_bytes() -> None:
    for width, indexes in ((16, [1, 2, (1 << 63) - 1]), (16, [1 << 70, 1 << 128]), (32, [5, 1 << 200])):
        words = index_words(indexes, width)
        assert words.type == pa.binary(width)
        assert words.to_pylist() == [index_to_bytes(i, width) for i in indexes]


def test_encode_arrays_is_encode_arrow_by_shape() -> None:
    scalar = IntRangeUniverse(0, 9)
    keys = pa.array([3, None, 12])
    assert scalar.encode_arrays([keys]) == scalar.encode_arrow(keys)
    pair = TupleUniverse((IntRangeUniverse(0, 9, "a"), StringUniverse(2, "b")))
    arrays = [pa.array([1, 2]), pa.array(["x", "toolong"])]
    assert pair.encode_arrays(arrays) == pair.encode_arrow(arrays)
