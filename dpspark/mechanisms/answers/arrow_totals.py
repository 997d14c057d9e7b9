"""The exact per-batch arithmetic of an ``answers`` pass, shared by both engines (Arrow batches, Spark partitions).

Per row and scalar: the column's float64 reading x (NULL, NaN, unparseable text are NULL; +-inf kept),
x 2^b clipped to [-Delta, Delta] in double (exact: Delta < 2^52) and rounded half away from zero; a NULL is
the query's imputed value, or 0 and (noisy-count means) not counted under "drop"; 0 where the filter
(:mod:`dpspark.mechanisms.answers.arrow_masks`) is not TRUE. A unit's total is clipped to [lo, hi].

Speed without floating point in the sums. Scalars reading one column at one scale and null rule share one
rounding per batch, at the widest bound D of the group: for integers lo, hi in [-Delta, Delta] and
Delta <= D, clip(round(clip(y, -D, D)), -Delta, Delta) = round(clip(y, -Delta, Delta)) (rounding is monotone
and fixes integers). With every row its own unit, a group of :data:`SORTED_MIN` or more scalars is
evaluated in value order: one sort of the batch, the filter columns permuted once, and each scalar is

    lo * #(passing rows with v < lo) + sum(passing v in [lo, hi]) + hi * #(passing rows with v > hi)
    + clip(0, lo, hi) * #(rows that do not pass)

with two binary searches, counts of a boolean mask and one exact integer dot product. No aggregate can
overflow: a run of n values of magnitude <= D is summed in int64 only when n D < 2^63, else as two int64
limbs (v = hi 2^26 + lo) that fold into Python ints.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dpspark.engine.arrow.sums import round_half_away
from dpspark.mechanisms.answers.arrow_masks import Rows, filter_mask, interned
from dpspark.mechanisms.answers.queries import MAX_ARROW_DELTA, Scalar
#: limb width of the overflow-free sums
LIMB = 26
_MASK = (1 << LIMB) - 1
_INT64_LIMIT = 1 << 63
#: a row-level group of this many scalars on one column is summed in value order (one sort per batch)
SORTED_MIN = 4


def limb_step(bound: int) -> int:
    """Values per chunk whose limb sums provably stay below 2^62: the high limb of |v| <= bound is at most
    (bound >> LIMB) + 1 in magnitude (2^37 for a unit's total near 2^63), the low one below 2^LIMB."""
    return max(1, min(1 << 36, (1 << 62) // ((bound >> LIMB) + 1)))


def exact_sum(values: np.ndarray, bound: int) -> int:
    """The exact sum of int64 ``values`` with |v| <= bound (< 2^63): int64 when len x bound < 2^63, else limbs."""
    total = 0
    step = limb_step(bound)  # chunk limb sums stay below 2^62, whatever the bound (a unit total: up to 2^63)
    for start in range(0, len(values), step):
        part = values[start:start + step]
        if len(part) * bound < _INT64_LIMIT:
            total += int(part.sum(dtype=np.int64))
        else:
            total += (int((part >> LIMB).sum(dtype=np.int64)) << LIMB) + int((part & _MASK).sum(dtype=np.int64))
    return total


def masked_sum(values: np.ndarray, mask: np.ndarray, bound: int) -> int:
    """The exact sum of the int64 ``values`` (|v| <= bound < 2^52) where ``mask`` holds (len < 2^36)."""
    if len(values) * bound < _INT64_LIMIT:
        return int(np.dot(values, mask))  # integer dot product: exact, no float
    return (int(np.dot(values >> LIMB, mask)) << LIMB) + int(np.dot(values & _MASK, mask))


def value_key(s: Scalar) -> tuple:
    """Scalars with one key share their per-row rounding (column, scale, null rule)."""
    return (s.column, s.scale_bits, s.nulls)


def group_bounds(scalars: Sequence[Scalar]) -> dict[tuple, int]:
    """The widest bound D of each value key (the rounding every member can clip from)."""
    out: dict[tuple, int] = {}
    for s in scalars:
        if s.column is not None:
            out[value_key(s)] = max(out.get(value_key(s), 0), s.delta)
    return out


def fixed_values(rows: Rows, s: Scalar, bound: int) -> np.ndarray:
    """int64 per row: clip(round(x 2^b), -bound, bound), the imputed value for NULL, 0 under "drop"."""
    key = ("v", s.column, s.scale_bits, s.nulls, bound)
    if key not in rows.cache:
        x = rows.numeric(s.column)  # type: ignore[arg-type]
        valid = ~np.isnan(x)
        # clip to [-bound, bound] / 2^b before scaling (both exact doubles: bound < 2^52, b <= 64): the product
        # then cannot overflow, so no value can raise numpy's overflow warning (its presence would depend on the
        # data, and on Spark a worker prints it); clip(x) 2^b = clip(x 2^b) exactly, +-inf become the bound
        lim = float(Fraction(bound, 1 << s.scale_bits))  # report: input preprocessing (exact)
        y = np.clip(np.where(valid, x, 0.0), -lim, lim)  # report: input preprocessing (exact)
        y *= float(1 << s.scale_bits)  # report: exact (a power of two, |y| <= bound)
        v = round_half_away(y).astype(np.int64)
        imputed = s.imputed(bound)
        rows.cache[key] = v if imputed is None else np.where(valid, v, np.int64(imputed))
    return rows.cache[key]


def scalar_mask(rows: Rows, s: Scalar) -> np.ndarray | None:
    """Rows the scalar reads: the filter is TRUE and (counts of a noisy-count mean) the value is not NULL."""
    m = filter_mask(s.filter, rows)
    if s.present is not None:
        nan = rows.nulls(s.present)
        if nan is not None:
            m = ~nan if m is None else m & ~nan
    return m


def scalar_values(rows: Rows, s: Scalar, bound: int | None = None, shared: int | None = None) -> np.ndarray:
    """The scalar's per-row int64 value, |v| <= bound (default delta), 0 where it reads nothing.

    ``shared``: the group's widest bound D >= bound, whose cached rounding is clipped to ``bound`` here.
    """
    bound = s.delta if bound is None else bound
    m = scalar_mask(rows, s)
    if s.column is None:
        return np.ones(rows.n, dtype=np.int64) if m is None else m.astype(np.int64)
    v = fixed_values(rows, s, bound if shared is None else shared)
    if shared is not None and shared > bound:
        key = ("absmax", s.column, s.scale_bits, s.nulls, shared)
        if key not in rows.cache:
            rows.cache[key] = int(np.abs(v).max()) if rows.n else 0
        if rows.cache[key] > bound:
            v = np.minimum(v, bound)  # a clip (np.clip is several times slower)
            np.maximum(v, -bound, out=v)
    return v if m is None else np.where(m, v, np.int64(0))


def _clip0(s: Scalar) -> int:
    return min(max(0, s.lo), s.hi)


class RowTotals:
    """Every row its own unit: the exact totals of a batch of scalars, added up batch by batch.

    Histogram groups (:mod:`dpspark.mechanisms.answers.plan`) keep a value histogram each (``hists``); every
    other scalar a running exact total (``totals``). Both merge across batches and partitions by addition.
    """

    def __init__(self, scalars: Sequence[Scalar]) -> None:
        from dpspark.mechanisms.answers.plan import split

        self.scalars = interned(scalars)
        self.groups, rest = split(self.scalars, None)
        self.hists: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0, np.int64), np.zeros(0, np.int64))
                                                           for _ in self.groups]
        self.totals = [0] * len(self.scalars)
        self.counts = [j for j in rest if self.scalars[j].column is None]
        self.by_value: dict[tuple, list[int]] = {}
        for j in rest:
            if self.scalars[j].column is not None:
                self.by_value.setdefault(value_key(self.scalars[j]), []).append(j)
        self.bounds = group_bounds([self.scalars[j] for j in rest])

    def add(self, rows: Rows) -> None:
        """Add one batch."""
        if rows.n == 0:
            return
        for g, grp in enumerate(self.groups):
            rep = self.scalars[grp.members[0]]  # the members share column, scale, null rule and filter
            v = np.clip(scalar_values(rows, rep, MAX_ARROW_DELTA - 1), grp.L, grp.H)
            vals, counts = np.unique(v, return_counts=True)
            self.hists[g] = merge_hist(self.hists[g], vals, counts.astype(np.int64))
        for j in self.counts:
            s = self.scalars[j]
            m = scalar_mask(rows, s)
            passed = rows.n if m is None else int(np.count_nonzero(m))
            self.totals[j] += min(max(1, s.lo), s.hi) * passed + _clip0(s) * (rows.n - passed)
        for key, js in self.by_value.items():
            if len(js) >= SORTED_MIN:
                self._sorted(rows, js, self.bounds[key])
            else:
                for j in js:
                    self._direct(rows, j, self.bounds[key])

    def _direct(self, rows: Rows, j: int, bound: int) -> None:
        s = self.scalars[j]
        v = np.minimum(fixed_values(rows, s, bound), s.hi)  # [lo, hi] lies in [-Delta, Delta], in [-D, D]
        np.maximum(v, s.lo, out=v)
        m = scalar_mask(rows, s)
        if m is None:
            self.totals[j] += exact_sum(v, s.delta)
        else:
            passed = int(np.count_nonzero(m))
            self.totals[j] += masked_sum(v, m, s.delta) + _clip0(s) * (rows.n - passed)

    def _sorted(self, rows: Rows, js: list[int], bound: int) -> None:
        r = fixed_values(rows, self.scalars[js[0]], bound)
        order = value_order(r)
        rs = r[order]
        view = rows.take(order)
        n = rows.n
        for j in js:
            s = self.scalars[j]
            a = int(np.searchsorted(rs, s.lo, "left"))  # rows below lo
            b = int(np.searchsorted(rs, s.hi, "right"))  # rows up to hi
            m = scalar_mask(view, s)
            if m is None:
                self.totals[j] += s.lo * a + exact_sum(rs[a:b], bound) + s.hi * (n - b)
                continue
            passed = int(np.count_nonzero(m))
            below, above = int(np.count_nonzero(m[:a])), int(np.count_nonzero(m[b:]))
            self.totals[j] += (s.lo * below + masked_sum(rs[a:b], m[a:b], bound) + s.hi * above
                               + _clip0(s) * (n - passed))

    def result(self) -> list[int]:
        """The exact totals (histogram groups answered from their histograms)."""
        from dpspark.mechanisms.answers.plan import totals_from_histogram

        out = list(self.totals)
        for g, grp in enumerate(self.groups):
            vals, counts = self.hists[g]
            for j, t in totals_from_histogram(vals.tolist(), counts.tolist(), grp, self.scalars).items():
                out[j] = t
        return out


def value_order(r: np.ndarray) -> np.ndarray:
    """A permutation sorting the int64 ``r`` (a radix sort when its range fits 16 bits)."""
    if len(r) == 0:
        return np.zeros(0, dtype=np.int64)
    lo = int(r.min())
    if int(r.max()) - lo < 1 << 16:
        return np.argsort((r - lo).astype(np.uint16), kind="stable")
    return np.argsort(r)


def merge_hist(hist: tuple[np.ndarray, np.ndarray], vals: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two value histograms added (at most H - L + 1 bins: a public bound); counts < 2^63 rows."""
    allv = np.concatenate([hist[0], vals])
    allc = np.concatenate([hist[1], counts])
    u, inv = np.unique(allv, return_inverse=True)
    c = np.zeros(len(u), dtype=np.int64)
    np.add.at(c, inv, allc)
    return u, c


# ---------------------------------------------------------------------------------------------- units
def segment_totals(v: np.ndarray, starts: np.ndarray, bound: int) -> list[int] | np.ndarray:
    """Exact sums of the runs of ``v`` starting at ``starts`` (|v| <= bound): int64 when they cannot overflow."""
    if len(v) * bound < _INT64_LIMIT:
        return np.add.reduceat(v, starts)
    hi = np.add.reduceat(v >> LIMB, starts)
    lo = np.add.reduceat(v & _MASK, starts)
    return [(int(h) << LIMB) + int(l) for h, l in zip(hi.tolist(), lo.tolist())]


def clipped_total(sums: "list[int] | np.ndarray", lo: int, hi: int) -> int:
    """Sum over runs of clip(run total, lo, hi), exactly."""
    if isinstance(sums, np.ndarray):
        return exact_sum(np.clip(sums, lo, hi), max(abs(lo), abs(hi)))
    return sum(min(max(t, lo), hi) for t in sums)


class UnitStream:
    """Per-unit clipped totals from rows that arrive grouped by unit (a Spark partition sorted by unit).

    Each chunk's runs of equal unit ids are summed per scalar; every run but the last is complete and
    is clipped and added; the last run's exact sums wait (one Python int per scalar) for the next chunk,
    which continues it when its first unit equals the last one. Memory: one chunk plus O(scalars).
    """

    def __init__(self, scalars: Sequence[Scalar]) -> None:
        self.scalars = interned(scalars)
        self.bounds = group_bounds(self.scalars)
        self.totals = [0] * len(self.scalars)
        self.pending: list[int] | None = None
        self.last: Any = None  # the pending unit's id (a length-1 Arrow array)

    def add(self, rows: Rows, units: Any) -> None:
        """Add one chunk: ``rows`` and their unit ids (a non-NULL Arrow array, equal ids adjacent)."""
        if rows.n == 0:
            return
        starts = run_starts(units)
        cont = self.last is not None and len(run_starts(_concat(self.last, units.slice(0, 1)))) == 1
        pending = [0] * len(self.scalars)
        for j, s in enumerate(self.scalars):
            shared = self.bounds.get(value_key(s)) if s.column is not None else None
            runs = segment_totals(scalar_values(rows, s, None, shared), starts, s.delta)
            first = int(runs[0])
            if self.pending is not None:
                if cont:  # the chunk continues the waiting unit
                    first += self.pending[j]
                else:
                    self.totals[j] += min(max(self.pending[j], s.lo), s.hi)
            if len(runs) == 1:
                pending[j] = first
            else:
                self.totals[j] += min(max(first, s.lo), s.hi) + clipped_total(runs[1:-1], s.lo, s.hi)
                pending[j] = int(runs[-1])
        self.pending = pending
        self.last = units.slice(len(units) - 1, 1)

    def result(self) -> list[int]:
        """The exact totals, the last unit included."""
        out = list(self.totals)
        if self.pending is not None:
            for j, s in enumerate(self.scalars):
                out[j] += min(max(self.pending[j], s.lo), s.hi)
        return out


def _concat(a: Any, b: Any) -> Any:
    import pyarrow as pa

    return pa.concat_arrays([a, b])


def run_starts(units: Any) -> np.ndarray:
    """Where each run of equal unit ids starts (0 first). Floats: NaN equals NaN and -0.0 equals 0.0, as
    Spark groups them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(units)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if pa.types.is_floating(units.type):
        x = np.asarray(units.to_numpy(zero_copy_only=False), dtype=np.float64)
        diff = (x[1:] != x[:-1]) & ~(np.isnan(x[1:]) & np.isnan(x[:-1]))
    else:
        diff = np.asarray(pc.not_equal(units.slice(1), units.slice(0, n - 1)).to_numpy(zero_copy_only=False), dtype=bool)
    return np.flatnonzero(np.r_[True, diff])


__all__ = ["MAX_ARROW_DELTA", "RowTotals", "UnitStream", "exact_sum", "masked_sum", "scalar_values"]
