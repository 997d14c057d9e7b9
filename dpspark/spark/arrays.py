"""Spark side of the array form of the binary input (:mod:`dpspark.samplers.binary_input` has the semantics).

Element j of an array column is ``get(array, j)``: NULL when the array is NULL or has at most j elements,
whatever ``spark.sql.ansi.enabled`` says (``array[j]`` / ``element_at`` raise out of range under ANSI, which
Spark 4 enables by default). Positions 0..width-1 are public, so the d element columns are a deterministic
function of each row alone, exactly like d named columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from dpspark.spark.counts import InputError, check_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: element types whose 0/1 value is computed in SQL as for named columns (the product rounds' _SQL_BITS)
ELEMENT_TYPES = frozenset({"boolean", "tinyint", "smallint", "int", "bigint"})


def element_type(df: "DataFrame", column: str) -> str:
    """The Spark SQL element type of array column ``column``; an InputError when it is not an array of
    booleans or integers (refused before any pass reads data)."""
    from pyspark.sql.types import ArrayType

    check_columns(df, [column])
    t = df.schema[column].dataType
    if not isinstance(t, ArrayType):
        raise InputError(f"column {column!r} must be an array of booleans or integers for [columns] array; "
                         f"it is {t.simpleString()}")
    e = t.elementType.simpleString()
    if e not in ELEMENT_TYPES:
        raise InputError(f"column {column!r} is an array of {e}; [columns] array takes arrays of booleans or "
                         "integers (tinyint, smallint, int, bigint)")
    return e


def elements(column: str, width: int) -> list[Any]:
    """Column expressions for elements 0..width-1 (NULL out of range, NULL for a NULL array)."""
    from pyspark.sql import functions as F

    return [F.get(F.col(column), j) for j in range(width)]


def element_bits(df: "DataFrame", column: str, width: int) -> list[Any]:
    """0/1 long expressions, one per element: 1 iff element j is non-null and non-zero (true), as the named
    columns' bits in :func:`dpspark.spark.product_rounds._sql_words`."""
    from pyspark.sql import functions as F

    boolean = element_type(df, column) == "boolean"
    return [F.coalesce(e if boolean else e != F.lit(0), F.lit(False)).cast("long") for e in elements(column, width)]


def with_elements(df: "DataFrame", column: str, width: int, names: Sequence[str], keep: Sequence[str]) -> "DataFrame":
    """``keep`` columns and the array's elements as columns ``names`` (for the bernoulli column sums)."""
    from pyspark.sql import functions as F

    element_type(df, column)
    check_columns(df, list(keep))
    return df.select(*[F.col(c) for c in keep], *[e.alias(n) for e, n in zip(elements(column, width), names)])
