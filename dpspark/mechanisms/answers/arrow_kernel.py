"""Arrow side of an ``answers`` release: the same exact scalar statistics as :mod:`dpspark.mechanisms.answers.spark_kernel`.

The per-row arithmetic and the filters are those of :mod:`dpspark.mechanisms.answers.arrow_totals` and
:mod:`dpspark.mechanisms.answers.arrow_masks`, which the Spark kernel runs too (inside ``mapInArrow``): the
column is read by :func:`dpspark.engine.numeric.arrow_numeric` (NULL, NaN and unparseable text are NULL;
+-inf kept); x * 2^b is clipped to [-Delta, Delta] in double (exact: Delta < 2^52) and rounded half away from
zero; a NULL is the query's imputed value, or 0 and not counted under "drop"; a row the filter does not pass
is 0. Each unit's total (the row, or the ``unit_column`` group) is clipped to [lo, hi] and the clipped totals
are summed exactly.

Memory is O(units + queries), never O(rows x queries): the input is streamed in record batches of
:data:`BATCH_ROWS` rows and each scalar keeps only running sums (row-level batches), a value histogram
(:mod:`dpspark.mechanisms.answers.plan`), or per-unit accumulators for at most :data:`UNIT_CELLS` cells per scan
(more scalars than fit make more scans, a count fixed by the number of units).

No aggregate can overflow: every per-row value is |v| <= Delta < 2^52 and is summed as two int64 limbs
(v = hi 2^26 + lo, |hi| <= 2^26, 0 <= lo < 2^26), which fold into Python ints before :data:`FOLD_ROWS`
rows (2^36 rows x 2^26 <= 2^62); a run of n values of magnitude <= Delta is summed directly in int64 only
when n Delta < 2^63 (:func:`exact_sum`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from dpspark.engine.arrow.sums import round_half_away
from dpspark.engine.errors import InputError
from dpspark.mechanisms.answers.arrow_masks import ArrowRows, interned
from dpspark.mechanisms.answers.arrow_totals import (LIMB, MAX_ARROW_DELTA, RowTotals, exact_sum, group_bounds,
                                                     scalar_values, value_key)
from dpspark.mechanisms.answers.queries import QueryError, Scalar

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend

#: rows per streamed record batch (public)
BATCH_ROWS = 1 << 16
#: per-unit accumulator cells (units x scalars) one scan may hold; more scalars take more scans
UNIT_CELLS = 1 << 22
_MASK = (1 << LIMB) - 1
#: int64 limb accumulators fold into Python ints before this many rows (2^36 x 2^26 <= 2^62 < 2^63)
FOLD_ROWS = 1 << 36
_INT64_LIMIT = 1 << 63


def check_arrow(scalars: Sequence[Scalar]) -> None:
    """Refuse, before reading data, a batch the Arrow engine cannot compute exactly."""
    for s in scalars:
        if s.delta >= MAX_ARROW_DELTA:
            raise QueryError(f"query {s.query_name!r}: clip bound x 2^scale_bits >= 2^52 is too wide for the Arrow "
                             "engine; use the Spark engine or a smaller scale")


# ---------------------------------------------------------------------------------------------- scanning
def _scan(dataset: Any, columns: list[str]) -> Iterator[Any]:
    """Record batches of ``columns`` (at most BATCH_ROWS rows each) from a pyarrow dataset or table."""
    import pyarrow.dataset as ds

    if not isinstance(dataset, ds.Dataset):  # an in-memory table
        dataset = ds.dataset(dataset)
    yield from dataset.scanner(columns=columns, batch_size=BATCH_ROWS).to_batches()


def _batches(dataset: Any, columns: list[str], unit_column: str | None) -> Iterator[Any]:
    """The record batches of ``columns``, without the rows whose unit is NULL. A batch the filter empties is
    yielded too: whether a batch held only NULL units must not change what runs (rule 4)."""
    import pyarrow.compute as pc

    for batch in _scan(dataset, columns):
        if unit_column is not None:
            col = batch.column(batch.schema.get_field_index(unit_column))
            batch = batch.filter(pc.is_valid(col))  # always (one code path whatever the NULLs: rule 4)
        yield batch


def _check_columns(dataset: Any, scalars: Sequence[Scalar], unit_column: str | None) -> list[str]:
    """The columns to scan; a missing column or a filter that does not fit the schema is refused here (metadata)."""
    names = sorted({c for s in scalars for c in s.columns()} | ({unit_column} if unit_column else set()))
    present = set(dataset.schema.names)
    missing = [c for c in names if c not in present]
    for s in scalars:  # a filter on a missing column is the query's own error
        if s.filter is None:
            continue
        for c in s.filter.columns():
            if c not in present:
                raise QueryError(f"query {s.query_name!r}: filter {s.filter.text!r} names column {c!r}, which the "
                                 "input does not have")
        problem = s.filter.type_problem(dataset.schema, text_input=True)  # the strict check ran before the spend
        if problem:
            raise QueryError(f"query {s.query_name!r}: {problem}")
    if missing:
        raise InputError(f"input has no column(s) {', '.join(map(repr, missing))}; it has "
                         f"{', '.join(map(repr, sorted(present)))}")
    return names


# ---------------------------------------------------------------------------------------------- totals
def totals_kernel(backend: "ArrowBackend", stage: Any) -> list[int]:
    """The exact totals of a :class:`~dpspark.mechanisms.answers.stage.ScalarTotalsStage` on Arrow: one pass."""
    backend.progress(f"pass {backend.passes_run + 1}: {len(stage.scalars)} clipped sums on Arrow")
    out = scalar_totals_arrow(backend.dataset, stage.scalars, stage.unit_column)
    backend.pass_done()
    backend.progress("counts collected on the driver")
    return out


def scalar_totals_arrow(dataset: Any, scalars: Sequence[Scalar], unit_column: str | None) -> list[int]:
    """The exact integer statistic of every scalar, streaming ``dataset`` (a pyarrow dataset or table)."""
    check_arrow(scalars)
    names = _check_columns(dataset, scalars, unit_column)
    if unit_column is None:
        return _row_totals(dataset, scalars, names)
    return _unit_totals(dataset, scalars, names, unit_column)


def _order(scalars: Sequence[Scalar], js: Sequence[int]) -> list[int]:
    """Scalars sharing a column and a filter next to each other (the batch caches then hit)."""
    return sorted(js, key=lambda j: (scalars[j].column or "", scalars[j].scale_bits, repr(scalars[j].filter)))


def _row_totals(dataset: Any, scalars: Sequence[Scalar], names: list[str]) -> list[int]:
    """Every row a unit: running exact sums of clip(v, lo, hi), histograms for groups of one column's sums."""
    acc = RowTotals(scalars)
    for batch in _batches(dataset, names, None):
        acc.add(ArrowRows(batch))
    return acc.result()


def _unit_index(dataset: Any, unit_column: str) -> tuple[Any, int]:
    """(the distinct non-NULL unit ids, the number of rows with one): one scan of the unit column, O(units)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    seen = None
    rows = 0
    for batch in _scan(dataset, [unit_column]):
        ids = _unit_ids(pc.drop_null(batch.column(0)))
        rows += len(ids)
        u = pc.unique(ids)
        seen = u if seen is None else pc.unique(pa.concat_arrays([seen, u]))
    return seen, rows


def _unit_ids(values: Any) -> Any:
    """Unit ids as Spark groups them: a float -0.0 is 0.0 (Arrow's hash tells them apart; NaNs it joins)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_floating(values.type):
        return pc.add(values, pa.scalar(0.0, values.type))  # -0.0 + 0.0 = 0.0
    return values


class _UnitSums:
    """Exact per-unit sums of one scalar: an int64 accumulator when no unit's total can pass 2^63 (rows x
    Delta < 2^63), else two int64 limb accumulators folded into Python ints before FOLD_ROWS rows."""

    def __init__(self, n: int, wide: bool) -> None:
        self.wide = wide
        self.hi = np.zeros(n, dtype=np.int64)
        self.lo = np.zeros(n, dtype=np.int64) if wide else None
        self.folded: np.ndarray | None = None

    def add(self, idx: np.ndarray, v: np.ndarray) -> None:
        """Add each row's value ``v`` to its unit ``idx`` (unbuffered: repeated units add up)."""
        if not self.wide:
            np.add.at(self.hi, idx, v)
            return
        np.add.at(self.hi, idx, v >> LIMB)
        np.add.at(self.lo, idx, v & _MASK)

    def fold(self) -> None:
        """Move the limbs into Python ints (exact, whatever the row count) and restart them at 0."""
        if not self.wide:
            return
        whole = self.hi.astype(object) * (1 << LIMB) + self.lo.astype(object)
        self.folded = whole if self.folded is None else self.folded + whole
        self.hi[:] = 0
        self.lo[:] = 0

    def clipped(self, lo: int, hi: int) -> np.ndarray:
        """clip(unit total, lo, hi) per unit, exactly, as int64 (|lo|, |hi| < 2^52)."""
        if not self.wide:
            return np.clip(self.hi, lo, hi)
        if self.folded is not None:
            self.fold()
            return np.array([min(max(int(t), lo), hi) for t in self.folded], dtype=np.int64)
        a = self.hi + (self.lo >> LIMB)  # |hi| <= 2^62, lo >> 26 <= 2^36: no overflow
        b = self.lo & _MASK
        small = np.abs(a) < (1 << 36)  # then a 2^26 + b fits int64; else |total| >= 2^62 - 2^26 > 2^52
        t = np.where(small, a, 0) * (1 << LIMB) + b
        return np.where(small, np.clip(t, lo, hi), np.where(a > 0, hi, lo)).astype(np.int64)


def _unit_totals(dataset: Any, scalars: Sequence[Scalar], names: list[str], unit_column: str) -> list[int]:
    """Per-unit sums, clipped per unit; scalars in chunks of UNIT_CELLS // units cells, one scan per chunk."""
    import pyarrow.compute as pc

    scalars = interned(scalars)
    units, rows = _unit_index(dataset, unit_column)
    n = 0 if units is None else len(units)
    totals = [0] * len(scalars)
    if n == 0:
        return totals
    bounds = group_bounds(scalars)
    order_js = _order(scalars, range(len(scalars)))
    per_scan = max(1, UNIT_CELLS // n)
    for start in range(0, len(order_js), per_scan):
        chunk = order_js[start:start + per_scan]
        acc = {j: _UnitSums(n, rows * scalars[j].delta >= _INT64_LIMIT) for j in chunk}
        rows_since_fold = 0
        for batch in _batches(dataset, names, unit_column):
            if rows_since_fold + batch.num_rows > FOLD_ROWS:
                for a in acc.values():
                    a.fold()
                rows_since_fold = 0
            rows_since_fold += batch.num_rows
            ucol = _unit_ids(batch.column(batch.schema.get_field_index(unit_column)))
            idx = np.asarray(pc.index_in(ucol, value_set=units).to_numpy(zero_copy_only=False)).astype(np.int64)
            view = ArrowRows(batch)
            for j in chunk:
                s = scalars[j]
                shared = bounds.get(value_key(s)) if s.column is not None else None
                acc[j].add(idx, scalar_values(view, s, None, shared))
        for j in chunk:
            s = scalars[j]
            totals[j] = exact_sum(acc[j].clipped(s.lo, s.hi), s.delta)
        del acc
    return totals


__all__ = ["MAX_ARROW_DELTA", "check_arrow", "exact_sum", "round_half_away", "scalar_totals_arrow"]
