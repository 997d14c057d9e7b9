"""What both joins of a ``groups`` release (public and private) share: the kinds, and the join-column types."""

from __future__ import annotations

import pyarrow as pa

#: the join kinds, as Arrow's ``Table.join`` names them
HOWS = {"inner": "inner", "left": "left outer"}


def plain_type(t: pa.DataType) -> pa.DataType:
    """The type a join compares: a dictionary's value type, a large string as a string."""
    t = t.value_type if pa.types.is_dictionary(t) else t
    return pa.string() if pa.types.is_large_string(t) else t
