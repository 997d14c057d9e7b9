"""The universe interface shared by every kind.

A universe is a public map between keys and indexes [1, |X|] (Balcer-Vadhan's
model: keys reach the algorithms through a public injective encoding, docs/balcer-vadhan-notes.md §N). Every kind
except ``hashed`` is a bijection. Internally each kind works with the 0-based
offset ``index - 1``; the public methods add the 1.

Null and out-of-universe keys
-----------------------------
* Scalar API: :meth:`Universe.encode` raises :class:`OutOfUniverseError` for a
  null, mistyped or non-member key. The message names the universe and the
  reason, never the value.
* Vectorized API: :meth:`Universe.encode_arrow` returns :class:`EncodedKeys`,
  whose ``in_universe`` is True for members, False for non-null non-members
  and null where a key is null. ``index`` is null wherever ``in_universe`` is
  not True. A job drops null keys always and out-of-universe keys by default,
  or fails on them (:meth:`EncodedKeys.has_out_of_universe`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from dpspark.universe import wide
from dpspark.universe.errors import OutOfUniverseError, UniverseConfigError


@dataclass(frozen=True)
class EncodedKeys:
    """Result of a vectorized encode: index words plus a three-valued membership column."""

    #: FixedSizeBinary(16 or 32) big-endian index words; null unless ``in_universe`` is True.
    index: pa.FixedSizeBinaryArray
    #: True: member; False: non-null key outside the universe; null: some key column is null.
    in_universe: pa.BooleanArray

    def keep_mask(self) -> np.ndarray:
        """Boolean numpy mask of the rows to count (members with no null key)."""
        return self.in_universe.fill_null(False).to_numpy(zero_copy_only=False)

    def has_out_of_universe(self) -> bool:
        """True if some non-null key is outside the universe (for the job's fail mode)."""
        return bool((~self.in_universe.fill_null(True).to_numpy(zero_copy_only=False)).any())


def as_array(values: Any) -> pa.Array:
    """A single pyarrow Array from an Array, ChunkedArray, numpy array or Python sequence."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    return pa.array(values)


class Universe(ABC):
    """A public encoding of keys as indexes in [1, size]."""

    kind: ClassVar[str]
    #: Name of the key column this universe applies to (optional, used in messages and by Spark helpers).
    column: str | None

    # ---- properties -------------------------------------------------------------------------
    @property
    @abstractmethod
    def size(self) -> int:
        """|X|, exact."""

    @property
    def index_width(self) -> int:
        """Bytes per index word: 16 when size <= 2^128, else 32."""
        return wide.index_width(self.size)

    @property
    def label(self) -> str:
        """Human-readable name for messages, e.g. ``int_range universe for column 'age'``."""
        return f"{self.kind} universe" + (f" for column '{self.column}'" if self.column else "")

    @property
    def columns(self) -> tuple[str | None, ...]:
        """Key column names in order (one for scalar kinds)."""
        return (self.column,)

    @property
    def is_bijection(self) -> bool:
        """False only for hashed universes (and tuples containing one)."""
        return True

    #: True only for :class:`~dpspark.universe.TupleUniverse`: a key is a tuple of component keys.
    is_tuple: ClassVar[bool] = False

    @property
    def parts(self) -> tuple[Universe, ...]:
        """The scalar universes whose keys make up a key: a tuple's components, else the universe itself."""
        return (self,)

    @property
    def key_kind(self) -> str:
        """``"int"``, ``"string"`` or ``"bytes"``: what a scalar key is (its column type, its text form)."""
        raise TypeError(f"{self.label}: no key type rule for {type(self).__name__}")

    @property
    def words(self) -> str:
        """The universe in plain words, e.g. ``integers 0..120``."""
        return self.kind

    # ---- keys as text (a CLI argument) --------------------------------------------------------
    def parse_text(self, text: str, what: str = "key") -> Any:
        """The key written as ``text`` (see :mod:`dpspark.universe.keytext`); ``ParameterError`` names ``what``."""
        from dpspark.universe import keytext  # only the CLI parses text keys: the read library stays small

        return keytext.scalar_from_text(self.key_kind, text, what)

    def parse_json(self, value: Any, what: str = "key") -> Any:
        """The key given as a decoded JSON value (``{"hex": ...}`` for arbitrary bytes)."""
        from dpspark.universe import keytext

        return keytext.scalar_from_json(self.key_kind, value, what)

    # ---- released keys as Arrow columns --------------------------------------------------------
    def key_fields(self) -> tuple[tuple[str, str, pa.DataType], ...]:
        """How a released key of this scalar universe is shown in a table: (column name suffix, role, Arrow
        type) per column, the key column itself first (suffix ""); ``ValueError`` for a tuple."""
        raise ValueError(f"{self.label}: no bins layout for universe kind {self.kind!r}")

    def key_arrays(self, indexes: list[int]) -> list[pa.Array]:
        """The :meth:`key_fields` columns of the keys with these 1-based indexes."""
        words = wide.index_words(indexes, self.index_width)
        return [self.decode_arrow(words).cast(self.key_fields()[0][2])]

    # ---- scalar API -------------------------------------------------------------------------
    def encode(self, value: Any) -> int:
        """Index in [1, size] of ``value``; raises :class:`OutOfUniverseError` if it has none."""
        return self._offset(value) + 1

    def decode(self, index: int) -> Any:
        """The key with this index (``ValueError`` if outside [1, size])."""
        if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= self.size:
            raise ValueError(f"{self.label}: index must be an int in [1, size]")
        return self._value(index - 1)

    def index_bytes(self, value: Any) -> bytes:
        """The big-endian index word of ``value`` (what Spark and Arrow carry)."""
        return wide.index_to_bytes(self.encode(value), self.index_width)

    # ---- vectorized API ---------------------------------------------------------------------
    def encode_arrow(self, values: Any) -> EncodedKeys:
        """Vectorized :meth:`encode` of one key column (Arrow array or anything ``pa.array`` takes)."""
        return self._finish_encoding(*self._encode_offsets(as_array(values)))

    def decode_arrow(self, indexes: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Vectorized :meth:`decode` of index words; raises ``ValueError`` on nulls or out-of-range words."""
        offsets, nulls = wide.index_array_to_offsets(indexes)
        if nulls.any():
            raise ValueError(f"{self.label}: cannot decode null indexes")
        width = indexes.type.byte_width
        if width != self.index_width:
            raise ValueError(f"{self.label}: index words are {self.index_width} bytes, got {width}")
        if not wide.less_than_const(offsets, self.size).all():
            raise ValueError(f"{self.label}: some indexes are outside [1, size]")
        return self._decode_offsets(offsets)

    def encode_arrays(self, arrays: list[pa.Array]) -> EncodedKeys:
        """Vectorized encode of the key columns in component order (one array for a scalar universe)."""
        return self.encode_arrow(arrays[0])

    def _finish_encoding(self, offsets: np.ndarray, member: np.ndarray, nulls: np.ndarray) -> EncodedKeys:
        keep = member & ~nulls
        index = wide.offsets_to_index_array(offsets, keep, self.index_width)
        in_universe = pa.array(member & ~nulls, type=pa.bool_(), mask=nulls)
        return EncodedKeys(index=index, in_universe=in_universe)

    # ---- per-kind hooks ---------------------------------------------------------------------
    @abstractmethod
    def _offset(self, value: Any) -> int:
        """0-based offset of a scalar key, or raise OutOfUniverseError."""

    @abstractmethod
    def _value(self, offset: int) -> Any:
        """Scalar key at a 0-based offset known to be in range."""

    @abstractmethod
    def _encode_offsets(self, array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offset limbs of shape (index_width/4, rows), member mask, null mask) of one Arrow column."""

    @abstractmethod
    def arrow_type(self) -> pa.DataType:
        """Arrow type that :meth:`decode_arrow` returns."""

    def _decode_offsets(self, offsets: np.ndarray) -> pa.Array:
        # Generic fallback: per-row Python, fine for a few thousand released keys.
        return pa.array([self._value(o) for o in wide.limbs_to_ints(offsets)], type=self.arrow_type())

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Canonical, round-trippable spec (see :func:`dpspark.universe.universe_from_dict`)."""

    # ---- helpers for subclasses -------------------------------------------------------------
    def _reject(self, reason: str) -> OutOfUniverseError:
        return OutOfUniverseError(f"{self.label}: {reason}")

    def _config_error(self, reason: str) -> UniverseConfigError:
        return UniverseConfigError(f"{self.label}: {reason}")

    def _check_size(self) -> None:
        size = self.size
        if size > wide.MAX_UNIVERSE_SIZE:
            raise self._config_error(
                f"size is a {size.bit_length()}-bit number, above the maximum of 2^256 elements"
            )

    def _base_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.column is not None:
            d["column"] = self.column
        return d


def null_mask(array: pa.Array) -> np.ndarray:
    """Numpy boolean mask of the nulls of an Arrow array."""
    return array.is_null().to_numpy(zero_copy_only=False)
