"""Arrow side of an ``answers`` release: the same exact scalar statistics as :mod:`dpspark.mechanisms.answers.spark_kernel`.

Per row and scalar (identical on Spark): the column is read by :func:`dpspark.engine.numeric.arrow_numeric`
(NULL, NaN and unparseable text are NULL; +-inf kept); x * 2^b is clipped to [-Delta, Delta] in double
(exact: Delta < 2^52; this is where +-inf become the bound) and rounded half away from zero; a NULL is the
query's imputed value, or 0 and not counted under "drop"; a row the filter does not pass
(:mod:`dpspark.engine.predicate`) is 0. Each unit's total (the row, or the ``unit_column`` group) is clipped
to [lo, hi] and the clipped totals are summed exactly.

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
from dpspark.mechanisms.answers.queries import QueryError, Scalar

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend

#: per-row values are computed in float64 and must stay exactly representable
MAX_ARROW_DELTA = 1 << 52
#: rows per streamed record batch (public)
BATCH_ROWS = 1 << 16
#: per-unit accumulator cells (units x scalars) one scan may hold; more scalars take more scans
UNIT_CELLS = 1 << 22
#: limb width of the overflow-free sums
LIMB = 26
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


def exact_sum(values: np.ndarray, bound: int) -> int:
    """The exact sum of int64 ``values`` with |v| <= bound (< 2^52): int64 when len x bound < 2^63, else limbs."""
    total = 0
    step = 1 << 36  # limb sums of <= 2^36 values of magnitude <= 2^26 stay below 2^62
    for start in range(0, len(values), step):
        part = values[start:start + step]
        if len(part) * bound < _INT64_LIMIT:
            total += int(part.sum(dtype=np.int64))
        else:
            total += (int((part >> LIMB).sum(dtype=np.int64)) << LIMB) + int((part & _MASK).sum(dtype=np.int64))
    return total


class _Small(dict):
    """A tiny most-recent cache (bounded entries: per-batch arrays never pile up with the number of queries)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_or(self, key: Any, make: Any) -> Any:
        if key in self:
            return self[key]
        if len(self) >= self.size:
            del self[next(iter(self))]
        self[key] = value = make()
        return value


class _Batch:
    """One record batch and the per-batch arrays the scalars share (numeric reads, fixed values, masks)."""

    def __init__(self, batch: Any, keep: np.ndarray | None) -> None:
        self.batch = batch
        self.keep = keep  # rows with a non-NULL unit (None: all)
        self.rows = batch.num_rows if keep is None else int(keep.sum())
        self.cache = _Small(8)
        self.pred_cache: dict = {}

    def _rows(self, a: np.ndarray) -> np.ndarray:
        return a if self.keep is None else a[self.keep]

    def numeric(self, column: str) -> np.ndarray:
        """float64 of ``column`` with NaN for NULL (numeric.py's read; NaN in the data is NULL too)."""
        def make() -> np.ndarray:
            from dpspark.engine.numeric import arrow_numeric

            values = self.batch.column(self.batch.schema.names.index(column))
            if values.type.id == _dictionary_id():
                import pyarrow.compute as pc

                values = pc.cast(values, values.type.value_type)
            x = arrow_numeric(values).to_numpy(zero_copy_only=False)
            return self._rows(np.asarray(x, dtype=np.float64))
        return self.cache.get_or(("x", column), make)

    def fixed(self, s: Scalar, bound: int) -> np.ndarray:
        """int64 per row: clip(round(x 2^b), -bound, bound), the imputed value for NULL, 0 (dropped) else."""
        def make() -> np.ndarray:
            x = self.numeric(s.column)
            valid = ~np.isnan(x)
            y = np.where(valid, x, 0.0) * float(1 << s.scale_bits)  # report: input preprocessing (power of two)
            y = np.clip(y, -float(bound), float(bound))  # report: exact, bound < 2^52; +-inf become the bound
            v = round_half_away(y).astype(np.int64)
            imputed = s.imputed(bound)
            return v if imputed is None else np.where(valid, v, np.int64(imputed))
        return self.cache.get_or(("v", s.column, s.scale_bits, s.nulls, bound), make)

    def mask(self, s: Scalar) -> np.ndarray | None:
        """Rows the scalar reads: the filter is TRUE and (counts of a noisy-count mean) the value is not NULL."""
        def make() -> np.ndarray | None:
            import pyarrow.compute as pc

            m = None
            if s.filter is not None:
                res = s.filter.arrow_mask(self.batch, self.pred_cache)
                m = self._rows(np.asarray(pc.fill_null(res, False).to_numpy(zero_copy_only=False), dtype=bool))
            if s.present is not None:
                ok = ~np.isnan(self.numeric(s.present))
                m = ok if m is None else m & ok
            return m
        return self.cache.get_or(("m", s.filter, s.present), make)

    def value(self, s: Scalar, bound: int | None = None) -> np.ndarray:
        """The scalar's per-row int64 value, |v| <= bound (default delta)."""
        bound = s.delta if bound is None else bound
        if s.column is None:
            v = np.ones(self.rows, dtype=np.int64)
        else:
            v = self.fixed(s, bound)
        m = self.mask(s)
        return v if m is None else np.where(m, v, np.int64(0))


def _dictionary_id() -> int:
    import pyarrow as pa

    return pa.dictionary(pa.int32(), pa.string()).id


# ---------------------------------------------------------------------------------------------- scanning
def _scan(dataset: Any, columns: list[str]) -> Iterator[Any]:
    """Record batches of ``columns`` (at most BATCH_ROWS rows each) from a pyarrow dataset or table."""
    import pyarrow.dataset as ds

    if not isinstance(dataset, ds.Dataset):  # an in-memory table
        dataset = ds.dataset(dataset)
    yield from dataset.scanner(columns=columns, batch_size=BATCH_ROWS).to_batches()


def _batches(dataset: Any, columns: list[str], unit_column: str | None) -> Iterator[_Batch]:
    import pyarrow.compute as pc

    for batch in _scan(dataset, columns):
        if batch.num_rows == 0:
            continue
        keep = None
        if unit_column is not None:
            col = batch.column(batch.schema.names.index(unit_column))
            if col.null_count:
                keep = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
        yield _Batch(batch, keep)


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
    from dpspark.mechanisms.answers.plan import split, totals_from_histogram

    groups, rest = split(scalars, None)
    totals = [0] * len(scalars)
    hists: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0, np.int64), np.zeros(0, np.int64)) for _ in groups]
    rest = _order(scalars, rest)
    for b in _batches(dataset, names, None):
        for g, grp in enumerate(groups):
            rep = scalars[grp.members[0]]  # the members share column, scale, null rule and filter
            v = np.clip(b.value(rep, MAX_ARROW_DELTA - 1), grp.L, grp.H)
            vals, counts = np.unique(v, return_counts=True)
            hists[g] = _merge(hists[g], vals, counts.astype(np.int64))
        for j in rest:
            s = scalars[j]
            totals[j] += exact_sum(np.clip(b.value(s), s.lo, s.hi), s.delta)
    for g, grp in enumerate(groups):
        vals, counts = hists[g]
        for j, t in totals_from_histogram(vals.tolist(), counts.tolist(), grp, scalars).items():
            totals[j] = t
    return totals


def _merge(hist: tuple[np.ndarray, np.ndarray], vals: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two value histograms added (at most H - L + 1 bins: a public bound); counts < 2^63 rows."""
    allv = np.concatenate([hist[0], vals])
    allc = np.concatenate([hist[1], counts])
    u, inv = np.unique(allv, return_inverse=True)
    c = np.zeros(len(u), dtype=np.int64)
    np.add.at(c, inv, allc)
    return u, c


def _unit_index(dataset: Any, unit_column: str) -> Any:
    """The distinct non-NULL unit ids (one scan of the unit column; O(units) memory)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    seen = None
    for batch in _scan(dataset, [unit_column]):
        u = pc.unique(pc.drop_null(batch.column(0)))
        seen = u if seen is None else pc.unique(pa.concat_arrays([seen, u]))
    return seen


class _UnitSums:
    """Exact per-unit sums of one scalar: two int64 limb accumulators, folded into Python ints when needed."""

    def __init__(self, n: int) -> None:
        self.hi = np.zeros(n, dtype=np.int64)
        self.lo = np.zeros(n, dtype=np.int64)
        self.folded: np.ndarray | None = None

    def add(self, keys: np.ndarray, order: np.ndarray, starts: np.ndarray, v: np.ndarray) -> None:
        vs = v[order]
        self.hi[keys] += np.add.reduceat(vs >> LIMB, starts)  # keys are distinct: a plain fancy add is exact
        self.lo[keys] += np.add.reduceat(vs & _MASK, starts)

    def fold(self) -> None:
        """Move the limbs into Python ints (exact, whatever the row count) and restart them at 0."""
        whole = self.hi.astype(object) * (1 << LIMB) + self.lo.astype(object)
        self.folded = whole if self.folded is None else self.folded + whole
        self.hi[:] = 0
        self.lo[:] = 0

    def clipped(self, lo: int, hi: int) -> np.ndarray:
        """clip(unit total, lo, hi) per unit, exactly, as int64 (|lo|, |hi| < 2^52)."""
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

    units = _unit_index(dataset, unit_column)
    n = 0 if units is None else len(units)
    totals = [0] * len(scalars)
    if n == 0:
        return totals
    order_js = _order(scalars, range(len(scalars)))
    per_scan = max(1, UNIT_CELLS // n)
    for start in range(0, len(order_js), per_scan):
        chunk = order_js[start:start + per_scan]
        acc = {j: _UnitSums(n) for j in chunk}
        rows_since_fold = 0
        for b in _batches(dataset, names, unit_column):
            if b.rows == 0:
                continue
            if rows_since_fold + b.rows > FOLD_ROWS:
                for a in acc.values():
                    a.fold()
                rows_since_fold = 0
            rows_since_fold += b.rows
            ucol = b.batch.column(b.batch.schema.names.index(unit_column))
            idx = np.asarray(pc.index_in(ucol, value_set=units).to_numpy(zero_copy_only=False))
            if b.keep is not None:
                idx = idx[b.keep]
            idx = idx.astype(np.int64)
            order = np.argsort(idx, kind="stable")
            sidx = idx[order]
            starts = np.flatnonzero(np.r_[True, sidx[1:] != sidx[:-1]])
            keys = sidx[starts]
            for j in chunk:
                acc[j].add(keys, order, starts, b.value(scalars[j]))
        for j in chunk:
            s = scalars[j]
            totals[j] = exact_sum(acc[j].clipped(s.lo, s.hi), s.delta)
        del acc
    return totals


__all__ = ["MAX_ARROW_DELTA", "check_arrow", "exact_sum", "round_half_away", "scalar_totals_arrow"]
