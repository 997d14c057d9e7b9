"""The exact aggregates the Gaussian learner asks for, and a driver-side backend that computes them.

Units, pairs and singles (the same definition on every backend)
---------------------------------------------------------------
* Each row carries a unit id; unit u sits in bucket H_key(u) mod B, a keyed hash of the id alone (key
  drawn fresh per release, never written). A bucket holding exactly two rows contributes ONE pair
  difference D = x_a - x_b (fixed-point integers; its sign is irrelevant to D D^T and to ||A D||).
  Adding or removing one unit changes only its own bucket, hence at most one pair term, under any
  number of rows per unit. Never paired by rank or content. With N units in B = N buckets a unit is in
  a pair with probability (1 - 1/B)^(N-2) (N-1)/B ~ 1/e: about 1/e of the units are used.
  D ~ N(0, 2 Sigma) whatever mu is; the covariance routines halve at the end.
* Singles (for the mean): units with exactly one row. Adding or removing a unit adds or removes at
  most one single.
* Unpaired singles (for a mean preconditioned by an estimate from the pairs): rows alone in their
  bucket. They share no unit with any pair, so under i.i.d. rows the preconditioner (a function of the
  pairs and the noise) is independent of them - KLSU's fresh half, without a second key. Adding a
  unit u to bucket b: b empty -> u is alone (+1); b held one row v -> v is no longer alone (-1); b held
  more -> no change. Removing is the reverse: at most one unpaired single changes, as for singles.
  About 1/e of the units (e^-n/B of them at n units in B buckets).

Aggregates (:class:`GaussianSource`)
-----------------------------------
The learners (:mod:`.covariance`, :mod:`.mean`) read the singles only, through three aggregates:
* ``single_count()`` (sensitivity 1);
* ``clipped_moments(M, c, T)``: with y = M x - c (M a public integer matrix, c a public integer centre),
  the exact upper triangle of sum y' y'^T, y' the ball clip of y at ||y'||^2 <= T (:func:`ball_clip`);
* ``clipped_sums(M, c, T)``: the exact sum of the same y' (l2 sensitivity sqrt(T)).
The pair and bucket aggregates below are the preparation's older outputs (kept, unused by the learners):
* ``pair_count()``: the number of pairs (sensitivity 1);
* ``second_moments(M, T)``: with y = M D (M a public integer matrix), the number kept and the exact
  upper triangle of sum 1{||y||^2 <= T} y y^T (one term moves, Frobenius norm of its upper triangle
  <= ||y||^2 <= T);
* ``single_count()``; ``bin_counts(M, lo, width, bins)``: per coordinate j, the count of singles per
  bin clamp(floor((y_j - lo_j) / width), 0, bins - 1) (one single moves d counts by one: l2 sqrt(d));
* ``centred_sums(M, c, r)``: per coordinate, sum of clamp(y_j - c_j, -r, r) over singles (l2 <= r sqrt(d)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from math import isqrt

from dpspark.mechanisms.gaussian_model.exactops import exact_apply, exact_gram, exact_norm_le, exact_sq_norms
from dpspark.mechanisms.gaussian_model.fixed import INPUT_BOUND, IntMatrix


@dataclass(frozen=True)
class Moments:
    """Exact result of one filtered second-moment pass (never released as is)."""

    kept: int
    upper: tuple[int, ...]  # sum y_i y_j for i <= j, row-major upper triangle
    clipped: int = 0  # rows the ball clip moved (clipped moments only)


def upper_pairs(d: int) -> list[tuple[int, int]]:
    """The upper-triangle index pairs (i <= j) in the order of :attr:`Moments.upper`."""
    return [(i, j) for i in range(d) for j in range(i, d)]


class GaussianSource(Protocol):
    """What the learner's algorithms ask a backend for (see the module docstring)."""

    dimension: int
    passes: int

    def pair_count(self) -> int: ...

    def second_moments(self, matrix: IntMatrix, norm_bound_sq: int) -> Moments: ...

    def single_count(self) -> int: ...

    def unpaired_singles(self) -> None:
        """From now on single_count, bin_counts and centred_sums read the unpaired singles only."""

    def bin_counts(self, matrix: IntMatrix, lo: Sequence[int], width: int, bins: int) -> np.ndarray: ...

    def centred_sums(self, matrix: IntMatrix, centres: Sequence[int], radius: int) -> list[int]: ...


def fixed_point(values: np.ndarray, data_bits: int) -> np.ndarray:
    """rint(v 2^b) clamped to [-(2^31 - 1), 2^31 - 1] (int32 range) as int64; NaN counts as 0 (input
    preprocessing: a function of one row, shared by the driver and the Spark preparation)."""
    with np.errstate(over="ignore"):  # a huge value scales to +-inf, which the clip below maps to +-bound
        scaled = np.rint(np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0) * float(1 << data_bits))  # report: input conversion
    return np.clip(scaled, -INPUT_BOUND, INPUT_BOUND).astype(np.int64)


def apply_nulls(values: np.ndarray, unit_ids: np.ndarray | None, nulls: Any) -> tuple[np.ndarray, np.ndarray]:
    """Rows with a NaN (a missing value) dropped, or the NaN replaced by the public value, per the
    :class:`~dpspark.engine.numeric.NullRule` ``nulls`` (the driver twin of the Spark preparation)."""
    v = np.asarray(values, dtype=np.float64)
    ids = np.arange(v.shape[0], dtype=np.int64) if unit_ids is None else np.asarray(unit_ids, dtype=np.int64)
    missing = np.isnan(v)
    if nulls.drop:
        keep = ~missing.any(axis=1) if v.ndim == 2 else ~missing
        return v[keep], ids[keep]
    return np.where(missing, float(nulls.value), v), ids  # report: the public value enters the input conversion


def keyed_buckets(unit_ids: np.ndarray, secret: bytes, buckets: int) -> np.ndarray:
    """H_key(u) mod B for int64 unit ids: the same keyed hash as the Spark stage (xxhash64, keyed mix)."""
    from dpspark.engine.keyed import keyed_mix
    from dpspark.engine.xxhash64 import hash_long

    raw = hash_long(np.asarray(unit_ids, dtype=np.int64)).astype(np.int64).view(np.uint64)
    return np.mod(keyed_mix(raw, secret).view(np.int64), buckets)


def _apply(matrix: IntMatrix, x: np.ndarray) -> np.ndarray:
    """y = M x for every row, exactly: int64 (limb BLAS, :func:`exact_apply`) when a bound proves no overflow,
    else Python ints (slow path)."""
    x = np.asarray(x)
    if x.dtype != object:
        try:
            m = np.array(matrix, dtype=np.int64)
        except OverflowError:  # an entry beyond int64: Python ints below
            m = None
        if m is not None and int(np.abs(m).max(initial=0)) < 1 << 62:
            y = exact_apply(x, m)
            if y is not None:
                return y
    return np.asarray(x).astype(object) @ np.array(matrix, dtype=object).T  # exact Python ints


def _int64_room(y: np.ndarray, shifts: Sequence[int]) -> bool:
    """True when y is int64 and every y_j - shift_j stays below 2^62 in magnitude."""
    if y.dtype == object:
        return False
    return int(np.abs(y).max(initial=0)) + max((abs(int(v)) for v in shifts), default=0) < 1 << 62


def moments_of(matrix: IntMatrix, x: np.ndarray, norm_bound_sq: int) -> Moments:
    """Exact (kept, upper triangle of sum y y^T over ||y||^2 <= T) for y = M x over the int64 rows x."""
    d = len(matrix)
    if x.shape[0] == 0:
        return Moments(0, tuple(0 for _ in upper_pairs(d)))
    y = _apply(matrix, x)
    if y.dtype == object:
        keep = np.array([sum(int(v) * int(v) for v in row) <= norm_bound_sq for row in y], dtype=bool)
    else:
        keep = exact_norm_le(y, norm_bound_sq)  # vectorised exact norm test (int64 limb digits)
    kept = y[keep]
    if kept.dtype == object:
        gram = [[sum(int(a) * int(b) for a, b in zip(kept[:, i], kept[:, j])) for j in range(d)] for i in range(d)]
    else:
        gram = exact_gram(kept) if kept.shape[0] else [[0] * d for _ in range(d)]
    return Moments(int(keep.sum()), tuple(gram[i][j] for i, j in upper_pairs(d)))


def bins_of(matrix: IntMatrix, x: np.ndarray, lo: Sequence[int], width: int, bins: int) -> np.ndarray:
    """Per coordinate j, exact counts of clamp(floor((y_j - lo_j) / width), 0, bins - 1) over rows y = M x."""
    d = len(matrix)
    out = np.zeros((d, bins), dtype=np.int64)
    if x.shape[0] == 0:
        return out
    y = _apply(matrix, x)
    los = [int(v) for v in lo]
    if _int64_room(y, los) and int(width) < 1 << 62:
        # whole batch in int64: |y - lo| < 2^62, exact floor division, one bincount over (coordinate, bin)
        col = np.clip((y - np.array(los, dtype=np.int64)) // np.int64(int(width)), 0, bins - 1)
        flat = (col + np.arange(d, dtype=np.int64) * bins).reshape(-1)
        return np.bincount(flat, minlength=d * bins).reshape(d, bins).astype(np.int64)
    for j in range(d):
        if _int64_room(y, [lo[j]]) and int(width) < 1 << 62:
            col = np.clip((y[:, j] - np.int64(int(lo[j]))) // np.int64(int(width)), 0, bins - 1)  # exact int64 floor
        else:
            col = np.clip(((y[:, j].astype(object) - int(lo[j])) // int(width)), 0, bins - 1).astype(np.int64)
        out[j] = np.bincount(col.astype(np.int64), minlength=bins)
    return out


def centred_of(matrix: IntMatrix, x: np.ndarray, centres: Sequence[int], radius: int) -> list[int]:
    """Per coordinate j, the exact sum of clamp(y_j - c_j, -r, r) over rows y = M x."""
    d = len(matrix)
    if x.shape[0] == 0:
        return [0] * d
    y = _apply(matrix, x)
    cs = [int(v) for v in centres]
    if _int64_room(y, cs) and y.shape[0] < 1 << 30:
        # clamped terms are int64 (|y - c| < 2^62); each splits as hi 2^32 + lo with lo in [0, 2^32) and
        # |hi| <= 2^30, so over < 2^30 rows both column sums stay below 2^62: exact int64, recombined as ints
        clamped = np.clip(y - np.array(cs, dtype=np.int64), -int(radius), int(radius)) if int(radius) < 1 << 62 \
            else y - np.array(cs, dtype=np.int64)
        lo = (clamped & np.int64(0xFFFFFFFF)).sum(axis=0)
        hi = (clamped >> np.int64(32)).sum(axis=0)
        return [(int(h) << 32) + int(v) for h, v in zip(hi, lo)]
    out = []
    for j in range(d):
        if _int64_room(y, [centres[j]]) and int(radius) * y.shape[0] < 1 << 62:
            # every clamped term is at most r in magnitude, rows * r < 2^62: the int64 sum is exact
            out.append(int(np.clip(y[:, j] - np.int64(int(centres[j])), -int(radius), int(radius)).sum()))
        else:
            out.append(int(np.clip(y[:, j].astype(object) - int(centres[j]), -radius, radius).sum()))
    return out


def ceil_isqrt(v: int) -> int:
    """The smallest integer q >= 0 with q^2 >= v (v >= 0)."""
    return 0 if v <= 0 else isqrt(v - 1) + 1


def ball_clip(y: np.ndarray, bound_sq: int) -> tuple[np.ndarray, int]:
    """Every row of the integer matrix y projected into the ball ||y||^2 <= bound_sq, exactly.

    A row inside is kept as it is (decided by the exact integer norm). A row outside becomes
    y'_j = sign(y_j) floor(|y_j| s / q) with s = isqrt(bound_sq) <= sqrt(bound_sq) and
    q = ceil(sqrt(||y||^2)) >= ||y||, so ||y'|| <= s ||y|| / q <= sqrt(bound_sq): the clipped row lies in
    the ball however it was rounded (integers only; a function of the row alone). Returns (rows, number
    clipped); int64 in, int64 out (|y'_j| <= |y_j|).
    """
    if y.shape[0] == 0:
        return y, 0
    bound_sq = int(bound_sq)
    if bound_sq < 0:
        return np.zeros_like(y), y.shape[0]
    if y.dtype == object:
        inside = np.array([sum(int(v) * int(v) for v in row) <= bound_sq for row in y], dtype=bool)
    else:
        inside = exact_norm_le(y, bound_sq)
    out = np.flatnonzero(~inside)
    if len(out) == 0:
        return y, 0
    rows = y[out]
    norms = exact_sq_norms(rows) if rows.dtype != object else [sum(int(v) * int(v) for v in r) for r in rows]
    s = isqrt(bound_sq)
    q = np.array([ceil_isqrt(v) for v in norms], dtype=object)[:, None]
    obj = rows.astype(object)
    mag = (np.abs(obj) * s) // q  # exact Python ints: floor(|y_j| s / q)
    clipped = np.where(obj < 0, -mag, mag)
    result = y.copy()
    result[out] = clipped if y.dtype == object else clipped.astype(np.int64)
    return result, len(out)


def exact_column_sums(y: np.ndarray) -> list[int]:
    """Exact column sums of an integer matrix (int64 split into 32-bit halves, Python ints otherwise)."""
    d = y.shape[1]
    if y.shape[0] == 0:
        return [0] * d
    if y.dtype == object:
        return [int(v) for v in y.sum(axis=0)]
    total = [0] * d
    for a in range(0, y.shape[0], 1 << 29):  # |hi| <= 2^31, < 2^29 rows: both partial sums below 2^62
        part = y[a:a + (1 << 29)]
        lo = (part & np.int64(0xFFFFFFFF)).sum(axis=0)
        hi = (part >> np.int64(32)).sum(axis=0)
        total = [t + (int(h) << 32) + int(v) for t, h, v in zip(total, hi, lo)]
    return total


def centred_rows(matrix: IntMatrix, x: np.ndarray, centre: Sequence[int]) -> np.ndarray:
    """y = M x - c for every row, exactly (int64 when it provably fits, Python ints otherwise)."""
    y = _apply(matrix, x)
    cs = [int(v) for v in centre]
    if _int64_room(y, cs):
        return y - np.array(cs, dtype=np.int64)
    return y.astype(object) - np.array(cs, dtype=object)


def clipped_moments_of(matrix: IntMatrix, x: np.ndarray, centre: Sequence[int], bound_sq: int) -> Moments:
    """Exact (rows not clipped, upper triangle of sum y' y'^T, rows clipped) for y' = the ball clip (:func:`ball_clip`) of
    y = M x - c at ||y'||^2 <= bound_sq, over the integer rows x."""
    d = len(matrix)
    if x.shape[0] == 0:
        return Moments(0, tuple(0 for _ in upper_pairs(d)))
    y, clipped = ball_clip(centred_rows(matrix, x, centre), bound_sq)
    if y.dtype == object:
        gram = [[sum(int(a) * int(b) for a, b in zip(y[:, i], y[:, j])) for j in range(d)] for i in range(d)]
    else:
        gram = exact_gram(y)
    return Moments(int(x.shape[0] - clipped), tuple(gram[i][j] for i, j in upper_pairs(d)), int(clipped))


def clipped_sums_of(matrix: IntMatrix, x: np.ndarray, centre: Sequence[int], bound_sq: int,
                    with_count: bool = False) -> list[int]:
    """Exact column sums of the ball-clipped y = M x - c (:func:`ball_clip`, ||y'||^2 <= bound_sq); with
    ``with_count``, followed by the number of rows clipped."""
    if x.shape[0] == 0:
        return [0] * (len(matrix) + with_count)
    y, clipped = ball_clip(centred_rows(matrix, x, centre), bound_sq)
    return exact_column_sums(y) + ([int(clipped)] if with_count else [])


class ArraySource:
    """Exact aggregates of an in-memory float array on the driver (tests, benchmarks, small inputs).

    Every aggregate is exact integer arithmetic on the fixed-point rows (int64 with proven bounds,
    Python ints otherwise); pairs and singles follow the module docstring with ``keyed_buckets``.
    """

    def __init__(self, values: np.ndarray, data_bits: int, secret: bytes, buckets: int | None = None,
                 unit_ids: np.ndarray | None = None, nulls: Any = None) -> None:
        if nulls is not None:  # the declared rule for NaN (= NULL), as the Spark preparation applies it
            values, unit_ids = apply_nulls(values, unit_ids, nulls)
        x = fixed_point(values, data_bits)
        n = x.shape[0]
        ids = np.arange(n, dtype=np.int64) if unit_ids is None else np.asarray(unit_ids, dtype=np.int64)
        b = buckets or max(n, 1)
        self._index(x, ids, keyed_buckets(ids, secret, b), b)

    def _index(self, x: np.ndarray, ids: np.ndarray, bucket: np.ndarray, b: int) -> None:
        """Pairs, singles and rows alone from the fixed-point rows ``x``, their unit ids and buckets (the
        Arrow kernel computes ids and buckets from the input's own unit column, then calls this)."""
        self.dimension = x.shape[1]
        self.buckets = b
        # singles: ids that occur once
        uniq, inverse, per_id = np.unique(ids, return_inverse=True, return_counts=True)
        self._all_singles = self._singles = x[per_id[inverse] == 1]
        # pairs: buckets with exactly two rows
        order = np.argsort(bucket, kind="stable")
        sb = bucket[order]
        starts = np.flatnonzero(np.r_[True, sb[1:] != sb[:-1]])
        sizes = np.diff(np.r_[starts, len(sb)])
        first = starts[sizes == 2]
        xo = x[order]
        self._pairs = xo[first] - xo[first + 1]  # |D| <= 2^32: int64 exact
        self._alone = xo[starts[sizes == 1]]  # alone in its bucket: one row, one unit
        self.passes = 0

    def pair_count(self) -> int:
        return int(self._pairs.shape[0])

    def single_count(self) -> int:
        return int(self._singles.shape[0])

    def unpaired_singles(self) -> None:
        """The mean's aggregates read only the rows alone in their bucket from now on."""
        self._singles = self._alone

    def second_moments(self, matrix: IntMatrix, norm_bound_sq: int) -> Moments:
        self.passes += 1
        return moments_of(matrix, self._pairs, norm_bound_sq)

    def bin_counts(self, matrix: IntMatrix, lo: Sequence[int], width: int, bins: int) -> np.ndarray:
        self.passes += 1
        return bins_of(matrix, self._singles, lo, width, bins)

    def clipped_moments(self, matrix: IntMatrix, centre: Sequence[int], bound_sq: int) -> Moments:
        self.passes += 1
        return clipped_moments_of(matrix, self._singles, centre, bound_sq)

    def clipped_sums(self, matrix: IntMatrix, centre: Sequence[int], bound_sq: int,
                     with_count: bool = False) -> list[int]:
        self.passes += 1
        return clipped_sums_of(matrix, self._singles, centre, bound_sq, with_count)

    def centred_sums(self, matrix: IntMatrix, centres: Sequence[int], radius: int) -> list[int]:
        self.passes += 1
        return centred_of(matrix, self._singles, centres, radius)
