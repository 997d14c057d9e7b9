"""Query filters as numpy masks over one batch of rows: where the filter is TRUE, as Spark SQL evaluates it.

The ``answers`` kernels of both engines evaluate filters here (the Arrow engine on its own record batches,
the Spark engine inside ``mapInArrow`` on the rows Spark hands over), so the two engines cannot disagree.
The semantics are those of :mod:`dpspark.engine.predicate` (SQL three-valued logic; a row passes only
where the whole filter is TRUE):

* a number literal compares with the column's float64 reading (:mod:`dpspark.engine.numeric`: NaN, NULL and
  unparseable text are NULL) in IEEE order, against the literal's nearest double; ``-0.0 = 0.0``;
* string and boolean tests are the Arrow tests of :mod:`dpspark.engine.predicate` (byte-wise UTF-8 order);
* NOT, AND and OR follow Kleene's logic on (true, null) pairs of boolean arrays; a test on a column's values
  always builds its null array, NULLs or not (one path whatever the data; None only where a test can never
  be NULL, which is public: IS NULL).

:class:`Rows` is one batch's columns as the kernels read them, each computed once and cached; ``take(order)``
gives the same rows in another order (a sorted view), permuting each column lazily and once.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from dpspark.engine.predicate import (And, Cmp, InList, IsNull, Not, Or, Predicate, PredicateError, _arrow,
                                      _check_kind, _values, literal_double)

if TYPE_CHECKING:
    import pyarrow as pa

#: leaf results one batch keeps (bounded: a batch of 2^16 rows holds at most 16 MB of them)
LEAF_CACHE = 256

_OPS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
}


class Rows:
    """One batch's columns: their filter kinds, float64 readings (NaN = NULL) and raw Arrow arrays, cached."""

    def __init__(self, n: int, kinds: dict[str, str]) -> None:
        self.n = n
        self.kinds = kinds
        self.cache: dict[Any, Any] = {}
        self.leaves: dict[int, tuple[Any, tuple[np.ndarray, np.ndarray | None]]] = {}

    # --- what a source provides ----------------------------------------------------------------------
    def _numeric(self, column: str) -> np.ndarray:
        raise NotImplementedError

    def _raw(self, column: str) -> "pa.Array":
        raise NotImplementedError

    # --- cached reads ---------------------------------------------------------------------------------
    def kind(self, column: str) -> str:
        """"number", "string", "boolean", "null" or "other" (the filter grammar's kinds of the column's type)."""
        if column not in self.kinds:
            raise PredicateError(f"filter names column {column!r}, which the input does not have")
        return self.kinds[column]

    def numeric(self, column: str) -> np.ndarray:
        """float64 of the column (numeric.py's reading), NaN where it is NULL."""
        key = ("x", column)
        if key not in self.cache:
            self.cache[key] = self._numeric(column)
        return self.cache[key]

    def nulls(self, column: str) -> np.ndarray | None:
        """Where the numeric reading is NULL: always an array, so that one NULL row never switches the
        evaluation to another path (a timing difference that would answer whether the batch holds one)."""
        key = ("nan", column)
        if key not in self.cache:
            self.cache[key] = np.isnan(self.numeric(column))
        return self.cache[key]

    def raw(self, column: str) -> "pa.Array":
        """The column as stored (dictionary-decoded), for string and boolean tests."""
        key = ("raw", column)
        if key not in self.cache:
            self.cache[key] = self._raw(column)
        return self.cache[key]

    def take(self, order: np.ndarray) -> "Rows":
        """The same rows in ``order`` (a permutation): every column read through it is permuted once."""
        return _Taken(self, order)


class _Taken(Rows):
    def __init__(self, base: Rows, order: np.ndarray) -> None:
        super().__init__(base.n, base.kinds)
        self.base = base
        self.order = order

    def _numeric(self, column: str) -> np.ndarray:
        return self.base.numeric(column)[self.order]

    def _raw(self, column: str) -> "pa.Array":
        import pyarrow as pa

        return self.base.raw(column).take(pa.array(self.order))


class ArrowRows(Rows):
    """The rows of one Arrow record batch (the Arrow engine: types as the dataset stores them)."""

    def __init__(self, batch: "pa.RecordBatch") -> None:
        from dpspark.engine.predicate import _arrow_kind, _plain

        super().__init__(batch.num_rows, {f.name: _arrow_kind(_plain(f.type)) for f in batch.schema})
        self.batch = batch

    def _column(self, column: str) -> "pa.Array":
        import pyarrow.compute as pc
        import pyarrow.types as t

        values = self.batch.column(self.batch.schema.get_field_index(column))
        return pc.cast(values, values.type.value_type) if t.is_dictionary(values.type) else values

    def _numeric(self, column: str) -> np.ndarray:
        from dpspark.engine.numeric import arrow_floats

        return arrow_floats(self._column(column))  # one read path whatever the NULLs (no copy only without one)

    def _raw(self, column: str) -> "pa.Array":
        return self._column(column)


def interned(scalars: Sequence[Any]) -> list[Any]:
    """``scalars`` with equal filter tests as one shared object each, so a batch evaluates each test once."""
    from dataclasses import replace

    pool: dict[Any, Any] = {}

    def canon(node: Any) -> Any:
        if isinstance(node, Not):
            return Not(canon(node.item))
        if isinstance(node, (And, Or)):
            return type(node)(tuple(canon(item) for item in node.items))
        return pool.setdefault(node, node)

    return [s if s.filter is None else replace(s, filter=Predicate(s.filter.text, canon(s.filter.tree)))
            for s in scalars]


def filter_mask(pred: Predicate | None, rows: Rows) -> np.ndarray | None:
    """The rows where ``pred`` is TRUE (None: no filter, every row)."""
    if pred is None:
        return None
    return _eval(pred.tree, rows)[0]


# ----------------------------------------------------------------------------------------- evaluation
Pair = tuple[np.ndarray, "np.ndarray | None"]  # (TRUE, NULL); NULL None: no NULL anywhere


def _eval(node: Any, rows: Rows) -> Pair:
    if isinstance(node, Not):
        t, n = _eval(node.item, rows)
        return (~t if n is None else ~(t | n)), n
    if isinstance(node, And):
        parts = [_eval(item, rows) for item in node.items]
        t = parts[0][0]
        for p in parts[1:]:
            t = t & p[0]
        if all(p[1] is None for p in parts):
            return t, None
        false = np.zeros(rows.n, dtype=bool)
        null = np.zeros(rows.n, dtype=bool)
        for pt, pn in parts:
            if pn is None:
                false |= ~pt
            else:
                false |= ~(pt | pn)
                null |= pn
        return t, null & ~false
    if isinstance(node, Or):
        parts = [_eval(item, rows) for item in node.items]
        t = parts[0][0]
        for p in parts[1:]:
            t = t | p[0]
        nulls = [p[1] for p in parts if p[1] is not None]
        if not nulls:
            return t, None
        null = nulls[0]
        for pn in nulls[1:]:
            null = null | pn
        return t, null & ~t
    # by identity (hashing a test's Fraction literals costs more than the test); the entry holds the node, so
    # its id cannot be reused while cached. Equal tests of different filters share one object (``interned``).
    key = id(node)
    if key not in rows.leaves:
        if len(rows.leaves) >= LEAF_CACHE:
            del rows.leaves[next(iter(rows.leaves))]
        rows.leaves[key] = (node, _leaf(node, rows))
    return rows.leaves[key][1]


def _leaf(leaf: Any, rows: Rows) -> Pair:
    kind = rows.kind(leaf.column)
    n = rows.n
    if kind == "null":  # an all-NULL column: every test is NULL, IS NULL is TRUE
        if isinstance(leaf, IsNull):
            return np.ones(n, dtype=bool), None
        return np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
    if isinstance(leaf, IsNull):
        if kind == "number":
            nan = rows.nulls(leaf.column)
            return (np.zeros(n, dtype=bool) if nan is None else nan.copy()), None
        return np.asarray(rows.raw(leaf.column).is_null().to_numpy(zero_copy_only=False), dtype=bool), None
    values = _values(leaf)
    numeric = isinstance(values[0], Fraction)
    _check_kind(leaf, kind, numeric)
    if not numeric:  # strings and booleans: the Arrow test itself, on this one column
        return _arrow_leaf(leaf, rows)
    x = rows.numeric(leaf.column)
    nan = rows.nulls(leaf.column)
    if isinstance(leaf, Cmp):
        with np.errstate(invalid="ignore"):
            t = _OPS[leaf.op](x, literal_double(leaf.value))
        if leaf.op == "!=" and nan is not None:  # NaN != d is True in IEEE; a NULL is not
            t &= ~nan
        return t, nan
    assert isinstance(leaf, InList)
    doubles = np.array([literal_double(v) for v in values], dtype=np.float64)
    return np.isin(x, doubles), nan  # NaN is in no list (the literals are never NaN); -0.0 = 0.0


def _arrow_leaf(leaf: Any, rows: Rows) -> Pair:
    import pyarrow as pa
    import pyarrow.compute as pc

    col = rows.raw(leaf.column)
    one = pa.RecordBatch.from_arrays([col], names=[leaf.column])
    res = _arrow(leaf, one, {})
    t = np.asarray(pc.fill_null(res, False).to_numpy(zero_copy_only=False), dtype=bool)
    null = np.asarray(res.is_null().to_numpy(zero_copy_only=False), dtype=bool)  # always: one path whatever the NULLs
    return t, null


__all__ = ["ArrowRows", "Rows", "filter_mask", "interned"]
