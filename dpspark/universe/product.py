"""Tuple universes: several key columns combined in mixed radix, first column most significant.

index(v_1..v_k) = 1 + sum_j (i_j - 1) * prod_{l > j} |X_l|, where i_j is the
index of v_j in component universe X_j. |X| = prod_j |X_j| <= 2^1024 (issue 34 §5: three 31-byte string
columns make 744 bits; past 2^256 the index words are 48..128 bytes, which only the groups mechanism takes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from dpspark.errors import ParameterError
from dpspark.universe import wide
from dpspark.universe.base import EncodedKeys, Universe, as_array


@dataclass(frozen=True)
class TupleUniverse(Universe):
    """Product of scalar universes over several key columns (nested tuples are not allowed)."""

    components: tuple[Universe, ...]
    kind: ClassVar[str] = "tuple"
    is_tuple: ClassVar[bool] = True
    column: None = field(default=None, init=False)

    def __post_init__(self) -> None:
        components = tuple(self.components)
        object.__setattr__(self, "components", components)
        if not components:
            raise self._config_error("needs at least one component")
        for c in components:
            if not isinstance(c, Universe) or isinstance(c, TupleUniverse):
                raise self._config_error("components must be scalar (non-tuple) universes")
        names = [c.column for c in components if c.column is not None]
        if len(set(names)) != len(names):
            raise self._config_error("component columns must be distinct")
        self._check_size()

    def _check_size(self) -> None:
        """Up to 2^1024 elements (a scalar universe stays within 2^256)."""
        size = self.size
        if size > wide.MAX_TUPLE_SIZE:
            raise self._config_error(f"size is a {size.bit_length()}-bit number, above the maximum of 2^1024 "
                                     "elements for a tuple universe")

    @property
    def label(self) -> str:
        """``tuple universe over (a, b, ...)``."""
        names = ", ".join(c.column or f"#{j + 1}" for j, c in enumerate(self.components))
        return f"tuple universe over ({names})"

    @property
    def parts(self) -> tuple[Universe, ...]:
        """The components, most significant first."""
        return self.components

    @property
    def words(self) -> str:
        """``a: <words>; b: <words>`` (a component without a column is named ``#j``)."""
        return "; ".join(f"{c.column or f'#{j + 1}'}: {c.words}" for j, c in enumerate(self.components))

    def parse_text(self, text: str, what: str = "key") -> tuple[Any, ...]:
        """Components separated by commas (:func:`~dpspark.universe.keytext.split_tuple_key`), each parsed
        by its universe."""
        from dpspark.universe.keytext import split_tuple_key  # only the CLI parses text keys

        parts = split_tuple_key(text)
        if len(parts) != len(self.components):
            raise ParameterError(
                f"a tuple key needs {len(self.components)} comma-separated components, got {len(parts)}"
            )
        return tuple(c.parse_text(p, f"component {j + 1}") for j, (c, p) in enumerate(zip(self.components, parts)))

    def parse_json(self, value: Any, what: str = "key") -> tuple[Any, ...]:
        """A JSON list with one value per component."""
        if not isinstance(value, list) or len(value) != len(self.components):
            raise ParameterError(f"--key-json: a tuple key must be a JSON list of {len(self.components)} values")
        return tuple(c.parse_json(v, f"component {j + 1}") for j, (c, v) in enumerate(zip(self.components, value)))

    def encode_arrays(self, arrays: list[pa.Array]) -> EncodedKeys:
        """Vectorized encode of one array per component."""
        return self.encode_arrow(arrays)

    @property
    def columns(self) -> tuple[str | None, ...]:
        """Component column names, most significant first."""
        return tuple(c.column for c in self.components)

    @property
    def size(self) -> int:
        """Product of the component sizes."""
        size = 1
        for c in self.components:
            size *= c.size
        return size

    @property
    def multipliers(self) -> tuple[int, ...]:
        """Place values prod_{l > j} |X_l| of each component."""
        out, place = [], 1
        for c in reversed(self.components):
            out.append(place)
            place *= c.size
        return tuple(reversed(out))

    @property
    def is_bijection(self) -> bool:
        """True unless some component is hashed."""
        return all(c.is_bijection for c in self.components)

    def _offset(self, value: Any) -> int:
        if value is None:
            raise self._reject("key is null")
        if not isinstance(value, (tuple, list)) or len(value) != len(self.components):
            raise self._reject(f"key must be a tuple of {len(self.components)} values")
        return sum(c._offset(v) * m for c, v, m in zip(self.components, value, self.multipliers))

    def _value(self, offset: int) -> tuple[Any, ...]:
        parts = []
        for c, m in zip(self.components, self.multipliers):
            q, offset = divmod(offset, m)
            parts.append(c._value(q))
        return tuple(parts)

    def arrow_type(self) -> pa.DataType:
        """A struct with one field per component (named by column, else ``c1``, ``c2``, ...)."""
        return pa.struct(
            [pa.field(c.column or f"c{j + 1}", c.arrow_type()) for j, c in enumerate(self.components)]
        )

    def encode_arrow(self, values: Any) -> EncodedKeys:
        """Vectorized encode of the key columns: a Table/RecordBatch (selected by component column), a
        struct array, or a sequence of arrays in component order. A null in any column gives a null
        ``in_universe``."""
        if isinstance(values, (pa.Array, pa.ChunkedArray)) and pa.types.is_struct(values.type):
            return self._finish_encoding(*self._encode_offsets(as_array(values)))
        if isinstance(values, (pa.Table, pa.RecordBatch)):
            if any(c is None for c in self.columns):
                raise ValueError(f"{self.label}: components need column names to select from a table")
            arrays = [as_array(values.column(name)) for name in self.columns]
        elif isinstance(values, Sequence) and len(values) == len(self.components):
            arrays = [as_array(v) for v in values]
        else:
            raise ValueError(f"{self.label}: expected a table or {len(self.components)} key arrays")
        return self._finish_encoding(*self._combine(arrays))

    def _combine(self, arrays: list[pa.Array]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = len(arrays[0])
        if any(len(a) != rows for a in arrays):
            raise ValueError(f"{self.label}: key arrays differ in length")
        nlimbs = self.index_width // 4
        total = wide.zeros(nlimbs, rows)
        member = np.ones(rows, dtype=bool)
        nulls = np.zeros(rows, dtype=bool)
        for c, m, a in zip(self.components, self.multipliers, arrays):
            offsets, c_member, c_nulls = c._encode_offsets(a)
            total = wide.add(total, wide.mul_const(offsets, m, nlimbs))
            member &= c_member
            nulls |= c_nulls
        total[:, ~member | nulls] = 0
        return total, member, nulls

    def _encode_offsets(self, array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not pa.types.is_struct(array.type) or array.type.num_fields != len(self.components):
            raise TypeError(f"{self.label}: a single key array must be a struct of {len(self.components)} fields")
        offsets, member, nulls = self._combine([array.field(j) for j in range(len(self.components))])
        struct_nulls = array.is_null().to_numpy(zero_copy_only=False)
        offsets[:, struct_nulls] = 0
        return offsets, member & ~struct_nulls, nulls | struct_nulls

    def _decode_offsets(self, offsets: np.ndarray) -> pa.Array:
        # Per-row Python (divmod on ints): meant for released keys, thousands to a few million rows.
        rows = [self._value(o) for o in wide.limbs_to_ints(offsets)]
        children = [
            pa.array([r[j] for r in rows], type=c.arrow_type()) for j, c in enumerate(self.components)
        ]
        return pa.StructArray.from_arrays(children, fields=list(self.arrow_type()))

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "tuple", "components": [component specs, most significant first]}``."""
        return {"kind": self.kind, "components": [c.to_dict() for c in self.components]}
