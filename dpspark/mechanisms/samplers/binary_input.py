"""The binary input of ``bernoulli_sampler``, ``product_sampler`` and ``product_learner``: d named columns or ONE
array column (the ``[columns]`` section), and the array form on Arrow.

Config (exactly one of the two forms)::

    [columns]
    names = ["x0", "x1", ...]        # d columns, 0/1 integers or booleans

    [columns]
    array = "features"               # one column: array<boolean> or array<integer>
    width = 1000                     # the public d (required: d is fixed before any data is read)

    nulls = 0                        # optional, either form: what a missing bit counts as, 0 (default) or 1

Values (one rule, both engines, every binary mechanism). A value is read as a number by the infallible
casts of :mod:`dpspark.engine.numeric` (booleans: true = 1; text in CSV/JSON inputs: a plain decimal
number, anything else is unparseable); it is 1 iff it is non-zero - any non-zero finite value and +-inf
count 1 (as the rounds always did: "non-zero is 1") - and 0 iff it is zero. NULL, NaN and unparseable
text are *missing* and count as the public ``nulls`` value. ``nulls = "drop"`` is refused for these
mechanisms: their estimates divide by the public n (bernoulli: c/n; product rounds: the nominal round
size n |slice| / B), so a dropped row is not "uncounted" - it would silently count as 0, and the
release would state a rule it does not follow. Imputation is a per-row map that depends on that row
alone, so every sensitivity argument below is unchanged.

Array semantics. The array form is the named-column form applied to the d virtual columns
``features[0]``, ..., ``features[d-1]``: column ``features[j]`` holds element j of the row's array, and is
NULL when the array is NULL or has at most j elements. Elements beyond ``width`` are ignored. So every rule of
the named form carries over unchanged: an element is 1 iff it is non-zero (true), a missing one counts as the
``nulls`` value; in the product rounds a unit's record is the OR of its rows' bits, in the bernoulli sampler's
column sums a unit's total per column is clipped to [0, 1] (the same OR).
The same data written as d columns or as one array gives the same sums, on Arrow and on Spark.

Privacy is unchanged: a row's d bits are a deterministic function of that row alone (its array, read at the
public positions 0..width-1), so one unit still changes only its own record, and every sensitivity argument
of the named form applies word for word. Nothing about the data decides which elements are read.

Element types: boolean, or integers (signed of any width, unsigned up to 32 bits, which Spark reads as
integers). Any other element type (floats, strings, decimals, uint64, nested lists) is refused with an
:class:`~dpspark.engine.spark.counts.InputError` - before any budget is spent when the input is a local file (its
schema is read in the preflight), else when the engine opens the input. The manifest and the lookup name the
d outputs ``features[0]``, ``features[1]``, ... (:func:`element_name`; stable across releases).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: the most binary columns (named, or array width) a ``[columns]`` section takes
MAX_COLUMNS = 10_000


def element_name(array: str, j: int) -> str:
    """The public name of element j of array column ``array``: ``array[j]`` (manifest, lookup, inspect)."""
    return f"{array}[{j}]"


@dataclass(frozen=True)
class BinaryInput:
    """The parsed ``[columns]`` section: the d output names and, for the array form, the array column."""

    names: tuple[str, ...]
    array: str | None = None
    #: what a missing bit (NULL, NaN, unparseable text, NULL array, short array) counts as: 0 or 1 (public)
    nulls: int = 0

    @property
    def width(self) -> int:
        """d, the number of binary columns (public)."""
        return len(self.names)

    def input_columns(self) -> tuple[str, ...]:
        """The input columns read: the d named columns, or the one array column."""
        return self.names if self.array is None else (self.array,)

    def describe(self) -> dict[str, Any]:
        """For the plan: the form and d."""
        if self.array is None:
            return {"form": "columns", "d": self.width, "nulls": str(self.nulls)}
        return {"form": "array", "array": self.array, "width": self.width, "nulls": str(self.nulls)}

    def nulls_text(self) -> str:
        """The missing-value rule in words (plan, inspect, --dry-run)."""
        return (f"a NULL, NaN or unparseable value (and a NULL or short array's missing element) counts as "
                f"{self.nulls}; any other non-zero value, +-inf included, counts as 1")


def parse_binary_nulls(raw: Any) -> int:
    """``[columns] nulls``: 0 (default) or 1, the public value of a missing bit; "drop" is refused."""
    from dpspark.engine.numeric import parse_null_rule

    if raw is None:
        return 0
    if raw == "drop":
        raise ValueError("nulls = \"drop\" is not available for binary columns: the estimates divide by the "
                         "public n (max_units), so a dropped row would silently count as 0; set nulls = 0 or "
                         "nulls = 1 (the public value a NULL, NaN or unparseable bit counts as)")
    rule = parse_null_rule(raw, "columns")
    if rule.value not in (Fraction(0), Fraction(1)):
        raise ValueError(f"columns.nulls must be 0 or 1 for binary columns, got {raw!r}")
    return int(rule.value)


def parse_binary_input(raw: Any) -> BinaryInput:
    """``[columns]``: ``names = [...]`` (d binary columns) or ``array = "col"`` with ``width = d``."""
    form = "give names = [\"col1\", ...] (d binary columns) or array = \"col\" with width = d (one array column)"
    if not isinstance(raw, dict):
        raise ValueError(f"must be a table: {form}")
    unknown = sorted(set(raw) - {"names", "array", "width", "nulls"})
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}: {form}")
    if "names" in raw and ("array" in raw or "width" in raw):
        raise ValueError(f"names and array/width are mutually exclusive: {form}")
    if "names" in raw:
        names = raw["names"]
        if not isinstance(names, list) or not names or not all(isinstance(c, str) and c for c in names):
            raise ValueError("names must be a non-empty list of column names")
        if len(set(names)) != len(names):
            raise ValueError("names has a duplicate column")
        if len(names) > MAX_COLUMNS:
            raise ValueError(f"at most {MAX_COLUMNS} columns")
        return BinaryInput(tuple(names), None, parse_binary_nulls(raw.get("nulls")))
    if "array" not in raw:
        raise ValueError(f"needs names or array: {form}")
    array = raw["array"]
    if not isinstance(array, str) or not array:
        raise ValueError("array must be the name of one array column")
    if "width" not in raw:
        raise ValueError("array needs width = d, the public number of binary elements (d is fixed before any "
                         "data is read; elements beyond it are ignored, missing ones count 0)")
    width = raw["width"]
    if isinstance(width, bool) or not isinstance(width, int):
        raise ValueError(f"width must be an integer (the public d), got {type(width).__name__}")
    if not 1 <= width <= MAX_COLUMNS:
        raise ValueError(f"width must lie in [1, {MAX_COLUMNS}], got {width}")
    return BinaryInput(tuple(element_name(array, j) for j in range(width)), array, parse_binary_nulls(raw.get("nulls")))


# ----------------------------------------------------------------------------------------------- Arrow side
def _element_type_ok(t: pa.DataType) -> bool:
    return pa.types.is_boolean(t) or pa.types.is_signed_integer(t) or (
        pa.types.is_unsigned_integer(t) and t.bit_width <= 32)


def array_type_problem(t: pa.DataType, column: str) -> str | None:
    """Why an Arrow column of type ``t`` cannot be the binary array input (None if it can)."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        return f"column {column!r} must be an array of booleans or integers for [columns] array; it is {t}"
    if not _element_type_ok(t.value_type):
        return (f"column {column!r} is an array of {t.value_type}; [columns] array takes arrays of booleans or "
                "integers (at most 32-bit unsigned)")
    return None


def schema_problem(schema: pa.Schema, inp: BinaryInput, text_input: bool = False) -> str | None:
    """An input's schema (no rows) checked before any spend: why it cannot be read, or None.

    Named form: each column is numeric or boolean (strings only in a text input, CSV/JSON, where they are
    parsed per value); array form: an array of booleans or integers. A missing column is reported by the
    caller's presence check.
    """
    from dpspark.engine.numeric import numeric_type_problem

    if inp.array is None:
        for c in inp.names:
            if c in schema.names:
                problem = numeric_type_problem(schema.field(c).type, c, text_input=text_input)
                if problem:
                    return problem + " (binary columns: 0/1 numbers or booleans)"
        return None
    if inp.array not in schema.names:
        return None
    return array_type_problem(schema.field(inp.array).type, inp.array)


def binary_bits(values: "pa.Array | pa.ChunkedArray", nulls: int) -> np.ndarray:
    """The 0/1 bits (uint8) of one binary column on Arrow: 1 iff non-zero (+-inf included), ``nulls`` where
    the value is NULL, NaN or unparseable text (module docstring). Never raises on data."""
    from dpspark.engine.numeric import arrow_numeric

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    if pa.types.is_boolean(values.type):
        nz = values
    elif pa.types.is_integer(values.type):
        nz = pc.not_equal(values, pa.scalar(0, values.type))
    else:
        nz = pc.not_equal(arrow_numeric(values), pa.scalar(0.0))
    return pc.fill_null(nz, bool(nulls)).to_numpy(zero_copy_only=False).astype(np.uint8)


def expand_array(values: "pa.Array | pa.ChunkedArray", column: str, width: int) -> list[pa.Array]:
    """The d element columns of an Arrow array column: column j = element j, NULL when the array is NULL or short
    (a missing element then counts as the ``nulls`` value, as a NULL one does).

    One ``take`` per element from the flattened values (``pc.list_element`` would fail on a short array).
    """
    from dpspark.engine.spark.counts import InputError

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    problem = array_type_problem(values.type, column)
    if problem:
        raise InputError(problem)
    flat = pc.list_flatten(values)  # a NULL array emits nothing
    lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    starts = np.cumsum(lengths) - lengths  # where each row's elements begin in ``flat``
    out = []
    for j in range(width):
        present = lengths > j
        out.append(pc.take(flat, pa.array(starts + j, pa.int64(), mask=~present)))
    return out
