"""Universe indexes in Spark, with DataFrame API functions only (works on Spark Connect).

:func:`with_universe_index` adds two columns to a DataFrame:

* ``dp_index``: the big-endian index word, BinaryType of exactly
  ``universe.index_width`` bytes (16 or 32; see :mod:`dpspark.universe.wide`),
  null unless the row's key is in the universe;
* ``dp_in_universe``: True for members, False for non-null keys outside the
  universe, null when any key column is null.

A job counts ``df.filter(col("dp_in_universe"))``; in fail mode it first
checks ``df.filter(~col("dp_in_universe")).limit(1).count() == 0``.

How the SQL works
-----------------
Wide integers are lists of LongType columns holding 32-bit limbs (least
significant first), so every sum and product stays below 2^63 and never
trips ANSI overflow checks. Hex strings move bytes in and out:
``conv(substring(hex, .., 8), 16, 10)`` reads a limb and
``unhex(concat(lpad(hex(hi << 32 | lo), 16, '0'), ...))`` writes the word. Limb sums
are materialized in one ``withColumns`` stage and carried in the next, where
each carry refers to the previous one once, so expressions grow only
quadratically in the limb count (<= 8); Spark does not collapse projections
that would duplicate a non-trivial expression. A scalar universe takes two
``withColumns`` stages plus the output, a tuple four. Per kind:

* int_range: v + 2^63 (flip the sign bit of v's two's complement) plus the
  constant 1 - lo - 2^63, modulo 2^(8W);
* categorical: ``array_position`` on a literal array (up to
  ``categorical_literal_max`` values), else a left join against a broadcast
  lookup table built from Arrow;
* bytes/string: ``lpad(hex(bytes))`` plus the shortlex length offset
  (256^L - 1)/255, whose limbs are picked by a CASE on L (the string's UTF-8
  bytes via ``encode``);
* hashed: ``sha2(.., 256)``, the first ceil(k/4) hex digits, shifted right;
  ints hash their 8-byte big-endian two's complement ``unhex(lpad(hex(v), 16, '0'))``;
* tuple: mixed radix, constant multipliers split into 16-bit halves.

:func:`with_universe_halves` leaves the word as its int64 halves (no hex/unhex), for jobs that collect the
index to the driver, where :func:`halves_to_words` joins them with numpy.

``method="arrow"`` instead runs :meth:`Universe.encode_arrow` in
``mapInArrow`` (vectorized numpy, except hashed keys, which hash per row).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import pyarrow as pa

from dpspark.universe import Universe
from dpspark.universe.errors import KeyTypeError
from dpspark.universe.int_range import INT64_MAX, INT64_MIN
from dpspark.universe.keytypes import INT_TEXT

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from dpspark.universe import CategoricalUniverse, HashedUniverse, IntRangeUniverse
    from dpspark.universe.shortlex import _ShortlexUniverse

LIMB_MASK = 0xFFFFFFFF
DEFAULT_INDEX_COL = "dp_index"
DEFAULT_IN_UNIVERSE_COL = "dp_in_universe"
DEFAULT_CATEGORICAL_LITERAL_MAX = 64

_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")


def _F() -> ModuleType:  # noqa: N802 - lazy import: importing this module does not load pyspark
    import pyspark.sql.functions as F

    return F


def _col(name: str) -> Column:
    """A column by its exact name (quoted, so dots and spaces are not parsed)."""
    return _F().col("`" + name.replace("`", "``") + "`")


def _lit(value: int) -> Column:
    return _F().lit(value).cast("long")


def _limbs_from_hex(hex_col: Column, nlimbs: int) -> list[Column]:
    """Limbs of a column of exactly 8*nlimbs hex digits (most significant first)."""
    F = _F()
    return [
        F.conv(hex_col.substr((nlimbs - 1 - k) * 8 + 1, 8), 16, 10).cast("long") for k in range(nlimbs)
    ]


def _const_limbs(value: int, nlimbs: int) -> list[int]:
    value &= (1 << (32 * nlimbs)) - 1
    return [(value >> (32 * k)) & LIMB_MASK for k in range(nlimbs)]


def _normalized(limbs: list[Column]) -> list[Column]:
    """Carry-propagated limbs (inputs < 2^62) mod 2^(32*len), as one projection's expressions.

    Each carry refers to the previous one once, so the expressions grow only
    quadratically in the limb count (at most 8); the inputs should be plain
    column references (materialized by the previous stage).
    """
    F = _F()
    out: list[Column] = []
    carry: Column | None = None
    for limb in limbs:
        s = limb if carry is None else limb + carry
        out.append(s.bitwiseAND(_lit(LIMB_MASK)))
        carry = F.shiftright(s, 32)
    return out


class _Stages:
    """Adds temporary columns to a DataFrame, named apart from the user's columns."""

    def __init__(self, df: DataFrame) -> None:
        self.df = df
        self.prefix = f"__dpu_{uuid.uuid4().hex[:8]}_"
        self.names: list[str] = []

    def name(self, label: str) -> str:
        n = self.prefix + label
        self.names.append(n)
        return n

    def add(self, columns: dict[str, Column]) -> list[Column]:
        self.df = self.df.withColumns(columns)
        return [_F().col(n) for n in columns]


def _check_type(df: DataFrame, column: str, universe: Universe, allowed: tuple[str, ...], what: str) -> None:
    dtype = type(df.schema[column].dataType).__name__
    if dtype not in allowed:
        raise KeyTypeError(f"{universe.label}: Spark column '{column}' has type {dtype}, expected {what}")


_SPARK_TYPES = {  # key kind -> (Spark type names a key column may have, what the error says is expected)
    "int": (_INTEGRAL, "an integral type"),
    "string": (("StringType",), "StringType"),
    "bytes": (("BinaryType",), "BinaryType"),
}


def _int_range_limbs(
    st: _Stages, universe: IntRangeUniverse, c: Column, j: int, nlimbs: int, literal_max: int
) -> tuple[list[Column], Column]:
    F = _F()
    v = c.cast("long")
    lo_c, hi_c = max(universe.lo, INT64_MIN), min(universe.hi, INT64_MAX)
    member = (v >= _lit(lo_c)) & (v <= _lit(hi_c)) if lo_c <= hi_c else F.lit(False)
    # v + 2^63 (sign bit flipped), then + (-(lo + 2^63)) mod 2^(32*nlimbs)
    u = [v.bitwiseAND(_lit(LIMB_MASK)), F.shiftright(v, 32).bitwiseAND(_lit(LIMB_MASK)).bitwiseXOR(_lit(1 << 31))]
    u += [_lit(0)] * (nlimbs - 2)
    k_limbs = _const_limbs(-(universe.lo + (1 << 63)), nlimbs)
    return [a + _lit(b) if b else a for a, b in zip(u, k_limbs)], member


def _categorical_limbs(
    st: _Stages, universe: CategoricalUniverse, c: Column, j: int, nlimbs: int, literal_max: int
) -> tuple[list[Column], Column]:
    F = _F()
    key = c if universe.key_kind == "string" else c.cast("long")
    if universe.size <= literal_max:
        values = [F.lit(v) if isinstance(v, str) else _lit(v) for v in universe.values]
        pos = F.array_position(F.array(*values), key)  # 1-based, 0 when absent
        member = pos > 0
        offset0 = F.when(member, pos - 1).otherwise(_lit(0))
    else:
        value_name, pos_name = st.name(f"c{j}_value"), st.name(f"c{j}_pos")
        table = pa.table(
            {
                value_name: pa.array(list(universe.values), type=universe.arrow_type()),
                pos_name: pa.array(range(universe.size), type=pa.int64()),
            }
        )
        lookup = st.df.sparkSession.createDataFrame(table)
        st.df = st.df.join(F.broadcast(lookup), key == F.col(value_name), "left")
        member = F.col(pos_name).isNotNull()
        offset0 = F.coalesce(F.col(pos_name), _lit(0))
    return [offset0] + [_lit(0)] * (nlimbs - 1), member


def _shortlex_limbs(
    st: _Stages, universe: _ShortlexUniverse, c: Column, j: int, nlimbs: int, literal_max: int
) -> tuple[list[Column], Column]:
    F = _F()
    data = F.encode(c, "UTF-8") if universe.key_kind == "string" else c
    length = F.octet_length(data)
    member = length <= F.lit(universe.max_bytes)
    value_hex = F.lpad(F.hex(data), 8 * nlimbs, "0")  # truncates non-members: harmless, they are masked
    value = _limbs_from_hex(value_hex, nlimbs)
    # + (256^L - 1)/255, i.e. L low bytes of 0x01: limb k holds min(max(L - 4k, 0), 4) of them
    clamped = F.least(length, F.lit(universe.max_bytes))
    limbs = []
    for k, limb in enumerate(value):
        if 4 * k >= universe.max_bytes:
            limbs.append(limb)
            continue
        ones = (
            F.when(clamped >= 4 * k + 4, _lit(0x01010101))
            .when(clamped == 4 * k + 3, _lit(0x010101))
            .when(clamped == 4 * k + 2, _lit(0x0101))
            .when(clamped == 4 * k + 1, _lit(1))
            .otherwise(_lit(0))
        )
        limbs.append(limb + ones)
    return limbs, member


def _hashed_limbs(
    st: _Stages, universe: HashedUniverse, c: Column, j: int, nlimbs: int, literal_max: int
) -> tuple[list[Column], Column]:
    F = _F()
    if universe.key_kind == "int":  # the 8-byte big-endian two's complement
        digest = F.sha2(F.unhex(F.lpad(F.hex(c.cast("long")), 16, "0")), 256)
    else:
        digest = F.sha2(c, 256)
    ndigits = (universe.bits + 3) // 4
    shift = 4 * ndigits - universe.bits
    limbs = _limbs_from_hex(F.lpad(digest.substr(1, ndigits), 8 * nlimbs, "0"), nlimbs)
    if shift:
        low_bits = (1 << shift) - 1
        limbs = [
            F.shiftright(limbs[k], shift).bitwiseOR(
                F.shiftleft(limbs[k + 1].bitwiseAND(_lit(low_bits)), 32 - shift)
            )
            if k + 1 < nlimbs
            else F.shiftright(limbs[k], shift)
            for k in range(nlimbs)
        ]
    return limbs, F.lit(True)


#: the Spark SQL encoder of each scalar universe kind (chosen by ``universe.kind``, not by its class)
_KIND_LIMBS = {
    "int_range": _int_range_limbs,
    "categorical": _categorical_limbs,
    "bytes": _shortlex_limbs,
    "string": _shortlex_limbs,
    "hashed": _hashed_limbs,
}


def _component(
    st: _Stages, universe: Universe, column: str, j: int, literal_max: int
) -> tuple[list[Column], Column]:
    """Limb expressions of the component's 0-based offset (each < 2^34, congruent to the offset mod
    2^(8*index_width), normalized only after :func:`_normalized`) and membership for non-null keys.
    Large categoricals add a broadcast join to ``st.df`` first."""
    build = _KIND_LIMBS.get(universe.kind)
    if build is None:
        raise TypeError(f"{universe.label}: no Spark encoding for {type(universe).__name__}")
    _check_type(st.df, column, universe, *_SPARK_TYPES[universe.key_kind])
    return build(st, universe, _col(column), j, universe.index_width // 4, literal_max)


def _mul_const(limbs: list[Column], multiplier: int, nlimbs: int) -> list[list[Column]]:
    """Terms to add into each output limb for limbs * multiplier (mod 2^(32*nlimbs)).

    ``limbs`` must be normalized (< 2^32); the constant is split into 16-bit
    halves so every product stays below 2^48.
    """
    F = _F()
    terms: list[list[Column]] = [[] for _ in range(nlimbs)]
    for t, ct in enumerate(_const_limbs(multiplier, nlimbs)):
        low, high = ct & 0xFFFF, ct >> 16
        for s, a in enumerate(limbs):
            pos = s + t
            if pos >= nlimbs:
                break
            if low:
                terms[pos].append(a * _lit(low) if low != 1 else a)
            if high:
                p = a * _lit(high)  # stands for p * 2^16
                terms[pos].append(F.shiftleft(p.bitwiseAND(_lit(0xFFFF)), 16))
                if pos + 1 < nlimbs:
                    terms[pos + 1].append(F.shiftright(p, 16))
    return terms


def _halves(limbs: list[Column]) -> list[Column]:
    """64-bit halves of normalized 32-bit limbs (least significant first), joined with a shift and an or."""
    F = _F()
    return [F.shiftleft(limbs[k + 1], 32).bitwiseOR(limbs[k]) for k in range(0, len(limbs), 2)]


def _word(halves: list[Column]) -> Column:
    """Big-endian binary of the 64-bit halves (least significant first): hex and unhex.

    ``hex`` of a negative long prints its 16-digit two's complement, which is
    exactly the half's bit pattern; positive halves are left-padded.
    """
    F = _F()
    return F.unhex(F.concat(*[F.lpad(F.hex(h), 16, "0") for h in reversed(halves)]))


def _sum(terms: list[Column]) -> Column:
    if not terms:
        return _lit(0)
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def spark_int_text(column: Column) -> Column:
    """The Spark twin of :func:`dpspark.universe.keytypes.arrow_int_text` (a long column): a value matching
    :data:`~dpspark.universe.keytypes.INT_TEXT` is that integer, any other text NULL. Never raises, ANSI on or off."""
    return _F().when(column.rlike(INT_TEXT), column.try_cast("long"))


def _int_text_columns(st: "_Stages", components: Sequence[Universe], cols: list[str]) -> list[str]:
    """Key columns of integer kinds held as strings (a text input) replaced by their parsed longs
    (:func:`spark_int_text`: unparseable -> NULL, never a cast error), so the
    membership, the limbs and the NULL test all read the same value the Arrow encoder reads."""
    from pyspark.sql.types import StringType

    out = list(cols)
    for j, (comp, col) in enumerate(zip(components, cols)):
        if comp.key_kind == "int" and isinstance(st.df.schema[col].dataType, StringType):
            name = st.name(f"c{j}_int")
            st.add({name: spark_int_text(_col(col))})
            out[j] = name
    return out


def with_universe_index(
    df: DataFrame,
    universe: Universe,
    columns: Sequence[str] | None = None,
    *,
    index_col: str = DEFAULT_INDEX_COL,
    in_universe_col: str = DEFAULT_IN_UNIVERSE_COL,
    method: str = "sql",
    categorical_literal_max: int = DEFAULT_CATEGORICAL_LITERAL_MAX,
) -> DataFrame:
    """``df`` plus the index word column and the three-valued membership column.

    ``columns`` are the key columns in component order (default:
    ``universe.columns``). ``method="sql"`` uses Spark SQL functions only;
    ``method="arrow"`` runs the numpy encoder in ``mapInArrow`` (pyspark
    requires pandas >= 2.2 for that). Both give identical columns. The SQL
    method does not preserve row order when a large categorical needs a join.
    """
    cols = _checked_columns(df, universe, columns)
    if method == "arrow":
        return _with_index_arrow(df, universe, cols, index_col, in_universe_col)
    if method != "sql":
        raise ValueError(f"method must be 'sql' or 'arrow', got {method!r}")
    st, halves, in_universe = _index_halves(df, universe, cols, categorical_literal_max)
    out = st.df.withColumns({in_universe_col: in_universe, index_col: _F().when(in_universe, _word(halves))})
    return out.drop(*st.names)


def index_half_names(index_col: str, universe: Universe) -> list[str]:
    """The columns :func:`with_universe_halves` adds for the index word, its most significant 64 bits first."""
    return [f"{index_col}_h{k}" for k in range(universe.index_width // 8)]


def with_universe_halves(
    df: DataFrame,
    universe: Universe,
    columns: Sequence[str],
    *,
    index_col: str = DEFAULT_INDEX_COL,
    in_universe_col: str = DEFAULT_IN_UNIVERSE_COL,
    categorical_literal_max: int = DEFAULT_CATEGORICAL_LITERAL_MAX,
) -> DataFrame:
    """Like :func:`with_universe_index` (SQL method), but the index word as LongType columns
    :func:`index_half_names` (its 64-bit big-endian halves, two's complement bit patterns; null off the universe).

    For jobs that bring the index to the driver: the word's hex and unhex string work is left out (it cost more
    CPU per distinct key than counting that key's rows); :func:`halves_to_words` joins the halves there.
    """
    cols = _checked_columns(df, universe, columns)
    F = _F()
    st, halves, in_universe = _index_halves(df, universe, cols, categorical_literal_max)
    names = index_half_names(index_col, universe)
    out = st.df.withColumns({in_universe_col: in_universe,
                             **{n: F.when(in_universe, h) for n, h in zip(names, reversed(halves))}})
    return out.drop(*st.names)


def halves_to_words(halves: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """Binary index words (big-endian, ``8 * len(halves)`` bytes) from non-null int64 halves, most significant
    first: the bytes :func:`with_universe_index` writes, joined with numpy instead of Spark strings."""
    import numpy as np

    n = len(halves[0])
    words = np.empty((n, len(halves)), dtype=">i8")  # big-endian int64: its bytes are the half's bit pattern
    for k, half in enumerate(halves):
        words[:, k] = half.to_numpy(zero_copy_only=False)
    width = 8 * len(halves)
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(words.tobytes())])
    return fixed.cast(pa.binary())


def _checked_columns(df: DataFrame, universe: Universe, columns: Sequence[str] | None) -> list[str]:
    """The key column names in component order, each present in ``df``."""
    cols = list(columns) if columns is not None else list(universe.columns)
    if len(cols) != len(universe.parts) or any(not isinstance(c, str) for c in cols):
        raise ValueError(f"{universe.label}: need {len(universe.parts)} key column name(s)")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{universe.label}: DataFrame has no column(s) {', '.join(map(repr, missing))}")
    return cols


def _index_halves(
    df: DataFrame, universe: Universe, cols: list[str], categorical_literal_max: int
) -> tuple[_Stages, list[Column], Column]:
    """(stages, the index word's 64-bit halves least significant first, three-valued membership)."""
    F = _F()
    components = universe.parts
    nlimbs = universe.index_width // 4
    st = _Stages(df)
    cols = _int_text_columns(st, components, cols)
    parts = [
        _component(st, comp, col, j, categorical_literal_max) for j, (comp, col) in enumerate(zip(components, cols))
    ]
    members = [member for _, member in parts]
    if universe.is_tuple:
        # stage 1: component limbs; stage 2: normalize each (mod its own width); stage 3: mixed radix
        raw_names = [[st.name(f"c{j}_r{k}") for k in range(len(limbs))] for j, (limbs, _) in enumerate(parts)]
        st.add({n: limb for names, (limbs, _) in zip(raw_names, parts) for n, limb in zip(names, limbs)})
        raw = [[F.col(n) for n in names] for names in raw_names]
        norm_exprs = {}
        norm_names = []
        for j, limbs in enumerate(raw):
            names = [st.name(f"c{j}_n{k}") for k in range(len(limbs))]
            norm_exprs.update(zip(names, _normalized(limbs)))
            norm_names.append(names)
        st.add(norm_exprs)
        sums: list[list[Column]] = [[] for _ in range(nlimbs)]
        for names, multiplier in zip(norm_names, universe.multipliers):
            for k, terms in enumerate(_mul_const([F.col(n) for n in names], multiplier, nlimbs)):
                sums[k].extend(terms)
        sums[0].append(_lit(1))
        acc_exprs = [_sum(terms) for terms in sums]
    else:
        acc_exprs = list(parts[0][0])
        acc_exprs[0] = acc_exprs[0] + _lit(1)  # index = offset + 1
    acc = st.add({st.name(f"acc{k}"): expr for k, expr in enumerate(acc_exprs)})
    limbs = _normalized(acc)
    any_null = F.lit(False)
    for column in cols:
        any_null = any_null | _col(column).isNull()
    all_member = F.lit(True)
    for member in members:
        all_member = all_member & F.coalesce(member, F.lit(False))
    in_universe = F.when(any_null, F.lit(None).cast("boolean")).otherwise(all_member)
    return st, _halves(limbs), in_universe


def _with_index_arrow(
    df: DataFrame, universe: Universe, cols: list[str], index_col: str, in_universe_col: str
) -> DataFrame:
    from pyspark.sql.types import BinaryType, BooleanType, StructField, StructType

    def encode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:  # runs in Python workers
        from dpspark.universe.keytypes import engine_key_arrays

        for batch in batches:
            arrays = engine_key_arrays(universe, [batch.column(name) for name in cols])  # text integers parsed
            encoded = universe.encode_arrays(arrays)
            yield batch.append_column(index_col, encoded.index.cast(pa.binary())).append_column(
                in_universe_col, encoded.in_universe
            )

    schema = StructType(
        list(df.schema.fields)
        + [StructField(index_col, BinaryType(), True), StructField(in_universe_col, BooleanType(), True)]
    )
    return df.mapInArrow(encode_batches, schema)


def count_universe_indexes(
    df: DataFrame,
    universe: Universe,
    columns: Sequence[str] | None = None,
    *,
    index_col: str = DEFAULT_INDEX_COL,
    count_col: str = "count",
    on_out_of_universe: str = "drop",
    categorical_literal_max: int = DEFAULT_CATEGORICAL_LITERAL_MAX,
) -> DataFrame:
    """Rows per universe index: a DataFrame of (``index_col`` binary word, ``count_col`` long).

    Rows with a null key are dropped. Rows whose key is outside the universe
    are dropped (``on_out_of_universe="drop"``) or make this function raise
    :class:`~dpspark.universe.OutOfUniverseError` (``"fail"``; that check runs
    one Spark job and the message carries no key). Only indexes with a
    nonzero count appear, in no particular order.

    The rows are grouped by their raw key columns first and only the distinct
    keys are encoded, because the index expressions (hex and ``conv`` string
    work) cost several times more per row than the grouping itself. Grouping
    equal keys first is exact: the index is a function of the key. For a
    hashed universe (not injective) colliding keys are summed afterwards.
    """
    from dpspark.universe import OutOfUniverseError

    if on_out_of_universe not in ("drop", "fail"):
        raise ValueError(f"on_out_of_universe must be 'drop' or 'fail', got {on_out_of_universe!r}")
    F = _F()
    components = universe.parts
    cols = list(columns) if columns is not None else list(universe.columns)
    if len(cols) != len(components) or any(not isinstance(c, str) for c in cols):
        raise ValueError(f"{universe.label}: need {len(components)} key column name(s)")
    tag = uuid.uuid4().hex[:8]
    rows_col, in_col = f"__dpu_{tag}_rows", f"__dpu_{tag}_in"
    grouped = df.groupBy(*[_col(c) for c in cols]).agg(F.count(F.lit(1)).alias(rows_col))
    encoded = with_universe_index(
        grouped,
        universe,
        cols,
        index_col=index_col,
        in_universe_col=in_col,
        categorical_literal_max=categorical_literal_max,
    )
    if on_out_of_universe == "fail" and encoded.filter(~F.col(in_col)).limit(1).count() > 0:
        raise OutOfUniverseError(f"{universe.label}: some non-null keys are outside the universe")
    members = encoded.filter(F.col(in_col))
    if universe.is_bijection:
        return members.select(F.col(index_col), F.col(rows_col).alias(count_col))
    return members.groupBy(index_col).agg(F.sum(rows_col).cast("long").alias(count_col))
