"""Numeric input columns read the same way on both engines, by casts that cannot raise on data.

One rule for every aggregate and learner column (issue "Trust", sections 1 and 2):

* **types before the spend**: :func:`numeric_type_problem` says, from a pyarrow schema alone, whether a
  column can be read as a number. Numbers and booleans can; strings can only where the input's types come
  from the data themselves (CSV, JSON lines: ``text_input=True``), never where they are declared metadata
  (Parquet, ORC, Arrow, pandas, a Spark DataFrame's schema), which are refused before any budget is spent;
* **casts that cannot fail**: a text value that is not a plain decimal number (:data:`NUMBER_PATTERN`) is
  NULL, never an exception that could quote it; integers become doubles without a range check
  (round to nearest, both engines), so a huge value never raises either;
* **NaN is NULL**, and **+-inf stay infinite** for the caller to clip to its public bounds;
* **NULL follows the column's declared rule** (:class:`NullRule`): ``"drop"`` - the row contributes nothing
  to that aggregate and is not counted by it either - or a public imputed value.

:func:`arrow_numeric` and :func:`spark_numeric` implement the same map, so the engines agree value for value.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpspark.errors import DPSparkError
from dpspark.exact import parse_rational

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import Column

#: a text value that both engines parse to the same double (RE2 and Java regex agree on this pattern)
NUMBER_PATTERN = r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"
#: the declared null rule when a config names none
DEFAULT_NULLS = "drop"


class NullRuleError(DPSparkError, ValueError):
    """A malformed ``nulls`` field (the message names the field, never data)."""


@dataclass(frozen=True)
class NullRule:
    """What a NULL (or NaN, or unparseable text) in one column means: drop the row, or a public value."""

    value: Fraction | None = None  # None: drop

    @property
    def drop(self) -> bool:
        """True when a NULL row contributes nothing and is not counted."""
        return self.value is None

    def describe(self) -> str:
        """The manifest form: "drop" or the exact imputed value."""
        return "drop" if self.value is None else str(self.value)

    def text(self) -> str:
        """In words, for ``inspect`` and ``--dry-run``."""
        if self.value is None:
            return "rows with a NULL, NaN or unparseable value are dropped (neither summed nor counted)"
        return f"NULL, NaN and unparseable values count as {self.value}"


def parse_null_rule(raw: Any, where: str) -> NullRule:
    """``nulls = "drop"`` or a public value (an int or an exact rational string; a float is refused)."""
    if raw is None or raw == DEFAULT_NULLS:
        return NullRule()
    if isinstance(raw, float):
        raise NullRuleError(f"{where}.nulls was given as a float ({raw!r}); floats are not exact. Write it as a "
                            f"string such as \"{raw}\", or \"drop\"")
    if isinstance(raw, bool):
        raise NullRuleError(f"{where}.nulls must be \"drop\" or a number, got {raw!r}")
    try:
        return NullRule(parse_rational(raw, f"{where}.nulls"))
    except (TypeError, ValueError):
        raise NullRuleError(f"{where}.nulls must be \"drop\" or an exact number such as \"0\" or \"1/2\", "
                            f"got {raw!r}") from None


# ------------------------------------------------------------------------------------------------ schema
def numeric_type_problem(dtype: "pa.DataType", column: str, *, text_input: bool = False) -> str | None:
    """Why ``column`` of Arrow type ``dtype`` cannot be read as a number (None when it can). Metadata only."""
    import pyarrow.types as t

    if t.is_integer(dtype) or t.is_floating(dtype) or t.is_decimal(dtype) or t.is_boolean(dtype) or t.is_null(dtype):
        return None
    if text_input and (t.is_string(dtype) or t.is_large_string(dtype)):
        return None  # a CSV/JSON column: parsed per value, unparseable -> NULL
    return (f"column {column!r} has type {dtype}, not a number; numeric aggregates and learners read integer, "
            "floating-point, decimal or boolean columns")


# ------------------------------------------------------------------------------------------------ Arrow
def arrow_numeric(values: "pa.Array | pa.ChunkedArray") -> "pa.Array | pa.ChunkedArray":
    """float64 values with NULL for NULL, NaN and unparseable text; +-inf kept. Never raises on data."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.types as t

    dtype = values.type
    if t.is_string(dtype) or t.is_large_string(dtype):
        ok = pc.match_substring_regex(values, NUMBER_PATTERN)
        values = pc.if_else(ok, values, pa.scalar(None, dtype))  # only parseable text reaches the cast
    elif t.is_null(dtype):
        return pc.cast(values, pa.float64())
    x = pc.cast(values, pa.float64(), safe=False)  # no range check: huge integers round, never raise
    return pc.if_else(pc.is_nan(x), pa.scalar(None, pa.float64()), x)


def arrow_floats(values: "pa.Array | pa.ChunkedArray") -> "np.ndarray":
    """:func:`arrow_numeric` as a float64 numpy array, NaN for NULL, by one path whatever the NULLs.

    ``to_numpy`` is zero-copy without a NULL and a filling copy with one: a read whose cost moves with one
    row. Here the values buffer is always read as it is and the validity always applied by ``np.where``.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    x = arrow_numeric(values)
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    n = len(x)
    data = x.buffers()[1]
    raw = (np.zeros(n) if data is None  # a NULL-typed column (public schema): no values buffer
           else np.frombuffer(data, dtype=np.float64, count=x.offset + n)[x.offset:])
    valid = np.asarray(pc.is_valid(x).to_numpy(zero_copy_only=False), dtype=bool)
    return np.where(valid, raw, np.nan)


# ------------------------------------------------------------------------------------------------ Spark
def spark_numeric(column: "Column", dtype: Any) -> "Column":
    """The Spark twin of :func:`arrow_numeric` for a column of Spark type ``dtype``. Never raises on data."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    if isinstance(dtype, StringType):  # only parseable text reaches the (then infallible) cast
        x = F.when(column.rlike(NUMBER_PATTERN), column.try_cast("double"))
    else:
        x = column.cast("double")  # numeric or boolean: a widening cast, no ANSI failure
    return F.when(~F.isnan(x), x)  # NaN -> NULL (NULL stays NULL)
