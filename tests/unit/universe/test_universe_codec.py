"""Universe encodings: exact bijections, the documented formulas, and vectorized == scalar."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pyarrow as pa
import pytest

from dpspark.universe import (
    BytesUniverse,
    CategoricalUniverse,
    HashedUniverse,
    IntRangeUniverse,
    OutOfUniverseError,
    StringUniverse,
    TupleUniverse,
    index_from_bytes,
    index_to_bytes,
)
from dpspark.universe import wide

SECRET = "SECRET-VALUE-7391"


def shortlex_formula(s: bytes) -> int:
    """The index formula of the brief, written independently of the implementation."""
    return 1 + ((256 ** len(s)) - 1) // 255 + int.from_bytes(s, "big")


def words(encoded) -> list[int | None]:
    return [None if w is None else index_from_bytes(w) for w in encoded.index.to_pylist()]


def scalar_or_none(u, value):
    try:
        return u.encode(value)
    except OutOfUniverseError:
        return None


def check_vectorized_matches_scalar(u, values, arrow_array=None):
    """encode_arrow agrees with encode row by row (and flags), and decode_arrow inverts it."""
    arr = pa.array(values) if arrow_array is None else arrow_array
    enc = u.encode_arrow(arr)
    expected = [None if v is None else scalar_or_none(u, v) for v in values]
    assert words(enc) == expected
    assert enc.in_universe.to_pylist() == [None if v is None else e is not None for v, e in zip(values, expected)]
    assert enc.index.type == pa.binary(u.index_width)
    kept = enc.index.filter(pa.array(enc.keep_mask()))
    if u.is_bijection and len(kept):
        decoded = u.decode_arrow(kept).to_pylist()
        assert decoded == [v for v, e in zip(values, expected) if e is not None]
    return enc


# ---------------------------------------------------------------- index words
def test_index_word_helpers_wrap_only_at_2_pow_8w():
    assert index_to_bytes(1, 16) == bytes(15) + b"\x01"
    assert index_to_bytes(1 << 128, 16) == bytes(16)
    assert index_from_bytes(bytes(16)) == 1 << 128
    assert index_from_bytes(bytes(32)) == 1 << 256
    assert index_from_bytes(b"\xff" * 16) == (1 << 128) - 1
    with pytest.raises(ValueError):
        index_to_bytes(0, 16)
    with pytest.raises(ValueError):
        index_to_bytes((1 << 128) + 1, 16)


def test_wide_arithmetic_matches_python_ints():
    rng = np.random.default_rng(1)
    vals = [0, 1, (1 << 128) - 1, 1 << 127, 12345] + [int(x) for x in rng.integers(0, 1 << 62, 20)]
    vals += [int.from_bytes(rng.bytes(16), "big") for _ in range(20)]
    mod = 1 << 128
    limbs = np.hstack([wide.int_to_limbs(v, 4) for v in vals])  # (limbs, rows)
    for c in [0, 1, -1, (1 << 128) - 3, 0xFFFFFFFF, 3**70]:
        assert wide.limbs_to_ints(wide.add_const(limbs.copy(), c)) == [(v + c) % mod for v in vals]
        assert wide.limbs_to_ints(wide.mul_const(limbs, c % mod, 4)) == [(v * c) % mod for v in vals]
        assert list(wide.less_than_const(limbs, c)) == [v < c for v in vals]
    other = limbs[:, ::-1].copy()
    assert wide.limbs_to_ints(wide.sub(limbs, other)) == [(a - b) % mod for a, b in zip(vals, vals[::-1])]


# ---------------------------------------------------------------- int_range
def test_int_range_exhaustive_bijection():
    u = IntRangeUniverse(-3, 4)
    assert [u.encode(v) for v in range(-3, 5)] == list(range(1, 9))
    assert [u.decode(i) for i in range(1, 9)] == list(range(-3, 5))


def test_int_range_edges_vectorized_int64():
    u = IntRangeUniverse(-(1 << 63), (1 << 63) - 1, "x")
    assert u.size == 1 << 64
    vals = [-(1 << 63), (1 << 63) - 1, -1, 0, 1, None]
    enc = check_vectorized_matches_scalar(u, vals, pa.array(vals, pa.int64()))
    assert words(enc)[:2] == [1, 1 << 64]


@pytest.mark.parametrize("arrow_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64()])
def test_int_range_all_integer_arrow_types(arrow_type):
    u = IntRangeUniverse(-100, 100, "x")
    vals = [0, 5, 100, 101, None, 127] + ([-100, -101, -128] if pa.types.is_signed_integer(arrow_type) else [255])
    check_vectorized_matches_scalar(u, vals, pa.array(vals, arrow_type))


def test_int_range_uint64_beyond_int64():
    u = IntRangeUniverse(1 << 63, (1 << 64) - 1)
    vals = [1 << 63, (1 << 64) - 1, 5, None]
    enc = check_vectorized_matches_scalar(u, vals, pa.array(vals, pa.uint64()))
    assert words(enc) == [1, 1 << 63, None, None]
    assert u.decode_arrow(enc.index.filter(pa.array(enc.keep_mask()))).type == pa.uint64()


def test_int_range_index_2_pow_128_is_the_zero_word():
    lo = (1 << 63) - (1 << 128)
    u = IntRangeUniverse(lo, (1 << 63) - 1)
    assert u.size == 1 << 128 and u.index_width == 16
    enc = u.encode_arrow(pa.array([(1 << 63) - 1, -(1 << 63)], pa.int64()))
    assert enc.index.to_pylist()[0] == bytes(16)
    assert words(enc) == [u.encode((1 << 63) - 1), u.encode(-(1 << 63))] == [1 << 128, (1 << 128) - (1 << 64) + 1]
    assert u.index_bytes((1 << 63) - 1) == bytes(16)


def test_int_range_wide_bounds_random():
    u = IntRangeUniverse(-(1 << 200), 1 << 200)
    assert u.index_width == 32
    rng = np.random.default_rng(2)
    vals = [int(v) for v in rng.integers(-(1 << 63), (1 << 63) - 1, 200, dtype=np.int64)] + [None]
    check_vectorized_matches_scalar(u, vals, pa.array(vals, pa.int64()))
    with pytest.raises(ValueError, match="beyond 64 bits"):
        u.decode_arrow(pa.array([u.index_bytes(1 << 63), u.index_bytes(5)], pa.binary(32)))
    with pytest.raises(ValueError, match="beyond 64 bits"):
        u.decode_arrow(pa.array([u.index_bytes(-(1 << 63) - 1)], pa.binary(32)))
    assert u.decode(u.encode(-(1 << 200))) == -(1 << 200)


def test_int_range_sliced_and_chunked_input():
    u = IntRangeUniverse(0, 9)
    arr = pa.array([1, 2, 3, 50, None, 9], pa.int64()).slice(1)
    assert words(u.encode_arrow(arr)) == [3, 4, None, None, 10]
    chunked = pa.chunked_array([[1, 2], [3]], pa.int64())
    assert words(u.encode_arrow(chunked)) == [2, 3, 4]


# ---------------------------------------------------------------- categorical
def test_categorical_positions_and_vectorized():
    u = CategoricalUniverse(("DE", "FR", "é", ""), column="c")
    assert [u.encode(v) for v in ("DE", "FR", "é", "")] == [1, 2, 3, 4]
    assert [u.decode(i) for i in (1, 2, 3, 4)] == ["DE", "FR", "é", ""]
    check_vectorized_matches_scalar(u, ["FR", "", "xx", None, "é", "DE", "de"])
    check_vectorized_matches_scalar(u, ["FR", None, "xx"], pa.array(["FR", None, "xx"], pa.large_string()))


def test_categorical_ints_vectorized_all_int_types():
    u = CategoricalUniverse((7, -2, 1 << 40))
    check_vectorized_matches_scalar(u, [7, -2, 1 << 40, 3, None], pa.array([7, -2, 1 << 40, 3, None], pa.int64()))
    check_vectorized_matches_scalar(u, [7, 8, None], pa.array([7, 8, None], pa.int8()))
    big = [7, (1 << 64) - 2, None]  # (1<<64)-2 would wrap to -2 in a careless int64 cast
    enc = u.encode_arrow(pa.array(big, pa.uint64()))
    assert words(enc) == [1, None, None] and enc.in_universe.to_pylist() == [True, False, None]


def test_categorical_type_mismatch():
    u = CategoricalUniverse(("a",), column="c")
    with pytest.raises(TypeError, match="column 'c'.*expected string"):
        u.encode_arrow(pa.array([1, 2]))
    with pytest.raises(OutOfUniverseError, match="key is a int, expected string"):
        u.encode(1)


# ---------------------------------------------------------------- bytes / string
def test_bytes_shortlex_exhaustive_order_and_formula():
    u = BytesUniverse(2)
    keys = [b""] + [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    assert u.size == len(keys) == 65793
    assert [u.encode(k) for k in keys] == list(range(1, u.size + 1))
    assert all(u.encode(k) == shortlex_formula(k) for k in keys[:300] + keys[-300:])
    # vectorized, all of them, and back
    enc = u.encode_arrow(pa.array(keys, pa.binary()))
    assert words(enc) == list(range(1, u.size + 1))
    assert u.decode_arrow(enc.index).to_pylist() == keys
    assert [u.decode(i) for i in (1, 2, 257, 258, 65793)] == [b"", b"\x00", b"\xff", b"\x00\x00", b"\xff\xff"]


@pytest.mark.parametrize("max_bytes", [15, 16, 31])
def test_bytes_edges_vectorized(max_bytes):
    u = BytesUniverse(max_bytes, "b")
    rng = np.random.default_rng(max_bytes)
    vals = [b"", b"\x00", b"\xff", b"\xff" * max_bytes, b"\x00" * max_bytes, b"\xff" * (max_bytes + 1), None]
    vals += [rng.bytes(int(n)) for n in rng.integers(0, max_bytes + 2, 200)]
    enc = check_vectorized_matches_scalar(u, vals, pa.array(vals, pa.binary()))
    assert words(enc)[3] == u.size  # all-0xff of maximal length is the last index
    assert all(w is None or w == shortlex_formula(v) for v, w in zip(vals, words(enc)))
    check_vectorized_matches_scalar(u, vals[:20], pa.array(vals[:20], pa.large_binary()).slice(0))
    check_vectorized_matches_scalar(u, vals[5:40], pa.array(vals, pa.binary()).slice(5, 35))


def test_string_utf8_multibyte_and_limits():
    u = StringUniverse(4, "s")
    vals = ["", "a", "é", "€", "😀", "abcd", "abcde", "ééé", "é€", None, "\U0010ffff", "\x00"]
    enc = check_vectorized_matches_scalar(u, vals)
    assert words(enc)[3] == shortlex_formula("€".encode())
    assert enc.in_universe.to_pylist()[6] is False and enc.in_universe.to_pylist()[7] is False
    with pytest.raises(OutOfUniverseError, match="lone surrogate"):
        u.encode("\ud800")
    # an index whose bytes are not UTF-8 belongs to no str
    bad = BytesUniverse(4).encode(b"\xff")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        u.decode(bad)
    with pytest.raises(ValueError, match="not valid UTF-8"):
        u.decode_arrow(pa.array([index_to_bytes(bad, 16)], pa.binary(16)))


def test_string_random_vectorized_large_string():
    u = StringUniverse(15)
    rng = np.random.default_rng(5)
    alphabet = ["a", "é", "€", "😀", "Z", "\x00"]
    vals = ["".join(rng.choice(alphabet, int(n))) for n in rng.integers(0, 8, 300)]
    check_vectorized_matches_scalar(u, vals, pa.array(vals, pa.large_string()))


# ---------------------------------------------------------------- hashed
def test_hashed_formula_and_canonical_bytes():
    for bits in (1, 7, 64, 128, 130, 256):
        s = HashedUniverse(bits, "string")
        b = HashedUniverse(bits, "bytes")
        i = HashedUniverse(bits, "int")
        h = lambda data: int.from_bytes(hashlib.sha256(data).digest(), "big") >> (256 - bits)  # noqa: E731
        assert s.encode("é") == 1 + h("é".encode())
        assert b.encode(b"\x00\xff") == 1 + h(b"\x00\xff")
        assert i.encode(-2) == 1 + h(b"\xff" * 7 + b"\xfe")
        assert i.encode(1) == 1 + h(bytes(7) + b"\x01")
    assert not HashedUniverse(8, "int").is_bijection


def test_hashed_vectorized_matches_scalar():
    vals_s = ["", "a", "é", None, "x" * 1000]
    vals_b = [b"", b"\xff", None, b"\x00" * 40]
    vals_i = [0, -1, (1 << 63) - 1, -(1 << 63), None, 42]
    for bits in (5, 64, 128, 200, 256):
        check_vectorized_matches_scalar(HashedUniverse(bits, "string"), vals_s)
        check_vectorized_matches_scalar(HashedUniverse(bits, "string"), vals_s, pa.array(vals_s, pa.large_string()))
        check_vectorized_matches_scalar(HashedUniverse(bits, "bytes"), vals_b, pa.array(vals_b, pa.binary()))
        check_vectorized_matches_scalar(HashedUniverse(bits, "int"), vals_i, pa.array(vals_i, pa.int64()))
    u = HashedUniverse(64, "int")
    enc = u.encode_arrow(pa.array([5, (1 << 64) - 1, None], pa.uint64()))
    assert words(enc) == [u.encode(5), None, None] and enc.in_universe.to_pylist() == [True, False, None]
    enc32 = u.encode_arrow(pa.array([-7], pa.int32()))
    assert words(enc32) == [u.encode(-7)]


def test_hashed_cannot_decode_and_refuses_out_of_range_ints():
    u = HashedUniverse(16, "int", "k")
    with pytest.raises(ValueError, match="cannot be decoded"):
        u.decode(1)
    with pytest.raises(ValueError, match="cannot be decoded"):
        u.decode_arrow(pa.array([bytes(16)], pa.binary(16)))
    with pytest.raises(OutOfUniverseError, match="outside the signed 64-bit range"):
        u.encode(1 << 63)


# ---------------------------------------------------------------- tuple
def test_tuple_exhaustive_mixed_radix():
    c = CategoricalUniverse(("x", "y", "z"), column="c")
    a = IntRangeUniverse(10, 13, "a")
    b = BytesUniverse(1, "b")
    t = TupleUniverse((c, a, b))
    assert t.size == 3 * 4 * 257 and t.multipliers == (4 * 257, 257, 1)
    keys = list(itertools.product(c.values, range(10, 14), [b""] + [bytes([i]) for i in range(256)]))
    indexes = [t.encode(k) for k in keys]
    assert indexes == list(range(1, t.size + 1))  # lexicographic order, first column most significant
    assert all(
        t.encode(k) == 1 + (c.encode(k[0]) - 1) * 4 * 257 + (a.encode(k[1]) - 1) * 257 + (b.encode(k[2]) - 1)
        for k in keys[::97]
    )
    cols = [pa.array([k[0] for k in keys]), pa.array([k[1] for k in keys]), pa.array([k[2] for k in keys], pa.binary())]
    enc = t.encode_arrow(cols)
    assert words(enc) == indexes
    decoded = t.decode_arrow(enc.index)
    assert decoded.type == pa.struct([("c", pa.string()), ("a", pa.int64()), ("b", pa.binary())])
    assert [tuple(r.values()) for r in decoded.to_pylist()] == keys


def test_tuple_wide_nulls_and_out_of_universe():
    t = TupleUniverse(
        (
            HashedUniverse(100, "string", "h"),
            StringUniverse(5, "s"),
            IntRangeUniverse(-(1 << 63), (1 << 63) - 1, "i"),
        )
    )
    assert t.index_width == 32
    table = pa.table(
        {
            "i": pa.array([0, -1, None, 5, (1 << 63) - 1], pa.int64()),
            "s": ["é€", "", "a", "toolong", "\x00"],
            "h": ["a", None, "b", "c", "é"],
        }
    )
    enc = t.encode_arrow(table)
    expected = []
    for h, s, i in zip(table["h"].to_pylist(), table["s"].to_pylist(), table["i"].to_pylist()):
        expected.append(None if None in (h, s, i) else scalar_or_none(t, (h, s, i)))
    assert words(enc) == expected
    assert enc.in_universe.to_pylist() == [True, None, None, False, True]
    assert enc.has_out_of_universe()
    struct = pa.StructArray.from_arrays([table[c].combine_chunks() for c in ("h", "s", "i")], ["h", "s", "i"])
    assert words(t.encode_arrow(struct)) == expected


def test_tuple_input_errors():
    t = TupleUniverse((IntRangeUniverse(0, 3, "a"), IntRangeUniverse(0, 3, "b")))
    with pytest.raises(ValueError, match="expected a table or 2 key arrays"):
        t.encode_arrow([pa.array([1])])
    with pytest.raises(ValueError, match="differ in length"):
        t.encode_arrow([pa.array([1]), pa.array([1, 2])])
    with pytest.raises(OutOfUniverseError, match="tuple of 2 values"):
        t.encode((1,))


# ---------------------------------------------------------------- messages and decode checks
@pytest.mark.parametrize(
    "universe, value, reason",
    [
        (IntRangeUniverse(0, 10, "age"), 987654321, "outside"),
        (CategoricalUniverse(("a", "b"), column="country"), SECRET, "not in the value list"),
        (StringUniverse(4, "name"), SECRET, "longer than max_bytes"),
        (BytesUniverse(4, "blob"), SECRET.encode(), "longer than max_bytes"),
        (HashedUniverse(32, "int", "uid"), SECRET, "expected int"),
        (IntRangeUniverse(0, 10, "age"), None, "null"),
    ],
)
def test_out_of_universe_messages_name_the_column_not_the_value(universe, value, reason):
    with pytest.raises(OutOfUniverseError) as info:
        universe.encode(value)
    message = str(info.value)
    assert universe.column in message and reason in message
    assert SECRET not in message and "987654321" not in message


def test_tuple_error_names_the_component_column():
    t = TupleUniverse((IntRangeUniverse(0, 10, "age"), StringUniverse(3, "name")))
    with pytest.raises(OutOfUniverseError, match="column 'name'") as info:
        t.encode((3, SECRET))
    assert SECRET not in str(info.value)


def test_decode_rejects_out_of_range_and_wrong_width():
    u = IntRangeUniverse(0, 9)
    with pytest.raises(ValueError, match=r"\[1, size\]"):
        u.decode(11)
    with pytest.raises(ValueError, match=r"\[1, size\]"):
        u.decode(0)
    with pytest.raises(ValueError, match=r"outside \[1, size\]"):
        u.decode_arrow(pa.array([index_to_bytes(11, 16)], pa.binary(16)))
    with pytest.raises(ValueError, match=r"outside \[1, size\]"):
        u.decode_arrow(pa.array([bytes(16)], pa.binary(16)))  # the zero word means 2^128 here
    with pytest.raises(ValueError, match="16 bytes, got 32"):
        u.decode_arrow(pa.array([index_to_bytes(1, 32)], pa.binary(32)))
    with pytest.raises(ValueError, match="null"):
        u.decode_arrow(pa.array([None], pa.binary(16)))
