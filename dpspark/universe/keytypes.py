"""Which key column types each universe kind reads, decided on the schema alone (before any spend), and the
one infallible text-to-integer read both engines use for integer keys of a text input.

What each kind accepts, by :attr:`Universe.key_kind` (an Arrow type; a Spark schema is converted to Arrow by
the caller):

* ``int_range``, ``categorical`` of ints, ``hashed`` with ``key_type = "int"``: integer columns; in a text
  input (CSV, JSON lines: the types come from the data), also string columns, read by :func:`arrow_int_text`
  (and its Spark twin ``dpspark.engine.spark.encode.spark_int_text``);
* ``categorical`` of strings, ``string``, ``hashed`` with ``key_type = "string"``: string columns;
* ``bytes``, ``hashed`` with ``key_type = "bytes"``: binary columns;
* ``tuple``: each component its own column, by the rules above.

Anything else (floats, decimals, booleans, structs, lists, dates...) is refused before any budget is spent:
an integer key is never taken from a float column (1.5 has no index, and rounding it would be a silent
choice), and the engines' own type checks would refuse it later anyway.

The universes' own encoders (and so the lookup) stay strict; only the engines read a text input's integer
keys, through :func:`engine_key_arrays` (Arrow) and ``spark_int_text`` in the Spark engine.

Text integers: a value matching :data:`INT_TEXT` (an optional sign and 1 to 18 digits, so it fits int64
whatever it says) is that integer; any other text - "1.0", " 7", "abc", a 19-digit number - is NULL, like a
NULL key (dropped, never counted, never an error that could quote it). The same rule on both engines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from dpspark.universe.base import Universe

#: a text value read as an integer key (RE2 and Java regex agree); at most 18 digits, so the cast cannot overflow
INT_TEXT = r"^[+-]?[0-9]{1,18}$"


def _type_ok(kind: str, dtype: "pa.DataType", text_input: bool) -> bool:
    import pyarrow.types as t

    is_text = t.is_string(dtype) or t.is_large_string(dtype)
    if kind == "int":
        return t.is_integer(dtype) or (text_input and is_text)
    if kind == "string":
        return is_text
    return t.is_binary(dtype) or t.is_large_binary(dtype)


_WANT = {"int": "an integer column", "string": "a string column", "bytes": "a binary column"}


def pa_types() -> Any:
    """pyarrow.types (imported lazily)."""
    import pyarrow.types as t

    return t


def key_type_problem(universe: "Universe", columns: "list[str] | tuple[str, ...]", schema: "pa.Schema", *,
                     text_input: bool = False) -> str | None:
    """Why the key ``columns`` of ``schema`` cannot be read by ``universe`` (None when they can). Metadata only;
    a column absent from the schema is left to the caller's presence check."""
    parts = universe.parts
    for comp, col in zip(parts, columns):
        if col not in schema.names:
            continue
        kind = comp.key_kind
        dtype = schema.field(col).type
        if pa_types().is_dictionary(dtype):  # a dictionary column is read as its values (Spark does too)
            dtype = dtype.value_type
        if not _type_ok(kind, dtype, text_input):
            extra = " (or, in a CSV/JSON input, a string column of integers)" if kind == "int" else ""
            return (f"{comp.label}: key column {col!r} has type {dtype}; this universe reads "
                    f"{_WANT[kind]}{extra}")
    return None


def arrow_int_text(values: "pa.Array") -> "pa.Array":
    """int64 keys from a string column: :data:`INT_TEXT` values parsed, any other text NULL. Never raises."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ok = pc.match_substring_regex(values, INT_TEXT)
    kept = pc.if_else(ok, values, pa.scalar(None, values.type))  # only INT_TEXT values reach the cast
    return pc.cast(pc.replace_substring_regex(kept, r"^\+", ""), pa.int64())  # Arrow's cast takes no "+"


def int_kind_columns(universe: "Universe", columns: "list[str] | tuple[str, ...]") -> list[str]:
    """The key columns an integer kind reads (where a string column is parsed as text integers)."""
    parts = universe.parts
    return [col for comp, col in zip(parts, columns) if comp.key_kind == "int"]


def engine_key_arrays(universe: "Universe", arrays: "list[pa.Array]") -> "list[pa.Array]":
    """The engines' key columns as the universe's encoder takes them: a dictionary column decoded to its
    values (Spark reads it so), a string column of an integer kind parsed by :func:`arrow_int_text`."""
    import pyarrow as pa

    parts = universe.parts
    out = []
    for comp, arr in zip(parts, arrays):
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if comp.key_kind == "int" and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = arrow_int_text(arr)
        out.append(arr)
    return out
