"""ApproxBinSample with identical outputs, deciding comparisons by integer interval arithmetic (docs/balcer-vadhan-notes.md §E11).

:func:`dpspark.mechanisms.histogram.ordstat.approx_bin_sample` is a deterministic function
of (m, p, s, t, U). Its only output-relevant steps are the comparisons
"B_l >= U", where B_l is a prefix sum of ApproxConvExp(a, m, s, k), an integer
of up to log2(s) bits (about 66 n bits for PureSparseHistogram at |X| = 2^64).

Here s = 2^S and every entry b_j in [0, s] is tracked by integer bounds of the
real b_j / 2^(S-P), P = :func:`precision_bits` (about 350 bits, much less than
S), i.e. P-bit fixed point relative to s. The exact step b' = floor(sum(...)/s) (or /s^2 for odd bits) is
bracketed by

    hi' = ceil(sum(hi*hi[*A_hi]) / 2^P[2P]),   lo' = max(0, floor(sum(lo*lo[*A_lo]) / 2^P[2P]) - 1)

(floor(c/s) >= c/s - 1 and 2^(P-S) <= 1), which holds because every operation
is monotone on non-negative values. A comparison is decided from the bounds
whenever they do not straddle U; otherwise the exact big-integer vector is
computed (probability about (width)/2^P, below 2^-150 for the defaults).
Hence the output equals the exact algorithm's output for every input, which the
tests check, including inputs engineered to straddle.

When S >= 3P the lower-bound quotients are integers, so the "-1" disappears and
a whole vector step is one GMP product plus a per-slot byte slice
(:func:`interval_conv_exp_packed`); vectors of length 1 use scalar arithmetic.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import gmpy2
import numpy as np

from dpspark.mechanisms.histogram.ordstat import approx_bin_sample, approx_conv_exp, bernoulli_vector


def precision_bits(m: int, t: int) -> int:
    """Fixed-point bits P (a multiple of 8): >= 192 bits of margin over the width growth (about 2^log2(m) * 4t)."""
    bits = 192 + 2 * max(m, 1).bit_length() + 2 * (2 * t + 1).bit_length()
    return (bits + 7) & ~7


def _conv_self(vec: list[int], k: int) -> list[int]:
    """(vec * vec)[0:k] for non-negative ints: Kronecker substitution, one GMP squaring."""
    if k == 1:
        return [vec[0] * vec[0]]
    bits = 2 * max(x.bit_length() for x in vec) + k.bit_length() + 1
    nbytes = (bits + 7) >> 3
    packed = gmpy2.mpz(int.from_bytes(b"".join(x.to_bytes(nbytes, "little") for x in vec[:k]), "little"))
    raw = int(packed * packed).to_bytes(2 * k * nbytes, "little")
    return [int.from_bytes(raw[nbytes * j : nbytes * (j + 1)], "little") for j in range(k)]


def interval_conv_exp(
    a_lo: tuple[int, int], a_hi: tuple[int, int], i: int, prec: int, k: int
) -> tuple[list[int], list[int]]:
    """Bounds (lo, hi) on ApproxConvExp(a, i, s, k) / 2^(S - prec), entrywise, for i >= 1."""
    one = 1 << prec
    if k == 1:  # the common case (most levels return 0): scalar arithmetic on b_0 only
        lo0, hi0, alo, ahi, two = a_lo[0], a_hi[0], a_lo[0], a_hi[0], 2 * prec
        for bit in bin(i)[3:]:
            if bit == "1":
                lo0 = max(0, ((lo0 * lo0 * alo) >> two) - 1)
                hi0 = min(one, -((-(hi0 * hi0 * ahi)) >> two))
            else:
                lo0 = max(0, ((lo0 * lo0) >> prec) - 1)
                hi0 = min(one, -((-(hi0 * hi0)) >> prec))
        return [lo0], [hi0]
    lo = [a_lo[0], a_lo[1]][:k] + [0] * max(0, k - 2)
    hi = [a_hi[0], a_hi[1]][:k] + [0] * max(0, k - 2)
    for bit in bin(i)[3:]:
        sq_lo = _conv_self(lo, k)
        sq_hi = _conv_self(hi, k)
        if bit == "1":
            sq_lo = [sq_lo[0] * a_lo[0]] + [sq_lo[j] * a_lo[0] + sq_lo[j - 1] * a_lo[1] for j in range(1, k)]
            sq_hi = [sq_hi[0] * a_hi[0]] + [sq_hi[j] * a_hi[0] + sq_hi[j - 1] * a_hi[1] for j in range(1, k)]
            shift = 2 * prec
        else:
            shift = prec
        lo = [max(0, (x >> shift) - 1) for x in sq_lo]
        hi = [min(one, -((-x) >> shift)) for x in sq_hi]
    return lo, hi


@lru_cache(maxsize=64)
def _ceil_addend(k: int, slot: int, shift_bytes: int) -> Any:
    """sum_j (2^shift - 1) 2^(8 slot j): added before a per-slot floor to make it a ceiling."""
    row = b"\xff" * shift_bytes + b"\x00" * (slot - shift_bytes)
    return gmpy2.mpz(int.from_bytes(row * k, "little"))


def _packed_step(x: Any, k: int, slot: int, a: tuple[int, int] | None, shift_bytes: int, entry: int, ceil: bool) -> Any:
    """One floor/ceil step on a packed vector: ((x*x)[0:k] [* a]) / 2^shift per slot, re-packed."""
    total = k * slot
    mask = (gmpy2.mpz(1) << (8 * total)) - 1
    sq = (x * x) & mask
    if a is not None:
        sq = (sq * a[0] + (sq << (8 * slot)) * a[1]) & mask
    if ceil:
        sq += _ceil_addend(k, slot, shift_bytes)
    rows = np.frombuffer(int(sq).to_bytes(total, "little"), dtype=np.uint8).reshape(k, slot)
    if rows[:, shift_bytes + entry :].any():
        raise AssertionError("interval entry overflowed its slot")  # cannot happen by the size bounds
    out = np.zeros((k, slot), dtype=np.uint8)
    out[:, :entry] = rows[:, shift_bytes : shift_bytes + entry]
    return gmpy2.mpz(int.from_bytes(out.tobytes(), "little"))


def interval_conv_exp_packed(
    a_lo: tuple[int, int], a_hi: tuple[int, int], i: int, prec: int, k: int
) -> tuple[list[int], list[int]]:
    """Same bounds as :func:`interval_conv_exp` without the "-1", valid when S >= 3P; k >= 2, P % 8 == 0.

    With S >= 3P every lower-bound quotient sum(lo lo [A_lo]) 2^(S-2P) [2^(S-3P)] is an
    integer, so floor(c/s) needs no -1 and each step is a per-slot byte slice of one
    packed GMP product: no Python loop over the k entries.
    """
    entry = prec // 8 + 1  # every bound is < 2^(P+8)
    slot = (3 * prec + 16 + k.bit_length() + 7) // 8
    packed = []
    for vec in ((a_lo[0], a_lo[1]), (a_hi[0], a_hi[1])):
        row = b"".join(v.to_bytes(slot, "little") for v in vec) + b"\x00" * (slot * (k - 2))
        packed.append(gmpy2.mpz(int.from_bytes(row, "little")))
    lo, hi = packed
    for bit in bin(i)[3:]:
        odd = bit == "1"
        shift_bytes = (2 * prec if odd else prec) // 8
        lo = _packed_step(lo, k, slot, a_lo if odd else None, shift_bytes, entry, False)
        hi = _packed_step(hi, k, slot, a_hi if odd else None, shift_bytes, entry, True)
    out = []
    for x in (lo, hi):
        raw = int(x).to_bytes(k * slot, "little")
        out.append([int.from_bytes(raw[slot * j : slot * j + entry], "little") for j in range(k)])
    return out[0], out[1]


def approx_bin_sample_adaptive(
    m: int, num: int, den: int, s_bits: int, t: int, u: int, stats: dict[str, int] | None = None
) -> int:
    """Same output as ``approx_bin_sample(m, num, den, 2**s_bits, t, u)`` for every input, faster for large s.

    ``stats`` (optional) counts "decided" and "exact" comparisons, for tests and benchmarks.
    """
    s = 1 << s_bits
    if not 1 <= u <= s:
        raise ValueError("u must lie in [1, s]")
    if t == 0:
        return 0
    prec = precision_bits(m, t)
    if m == 0 or s_bits <= prec + 2:
        return approx_bin_sample(m, num, den, s, t, u)
    if den < 1 or not 0 <= num <= den:
        raise ValueError("p = num/den must lie in [0, 1]")
    one = 1 << prec
    # p'/2^(S-P) with p' = floor(2^S num/den) lies in [floor(2^P num/den), floor(2^P num/den) + 1].
    p_lo = (num << prec) // den
    p_hi = min(p_lo + 1, one)
    a_lo, a_hi = (one - p_hi, p_lo), (one - p_lo, p_hi)
    drop = s_bits - prec
    u_ceil = ((u - 1) >> drop) + 1  # B >= u is certain if B_lo >= ceil(u / 2^drop)
    u_floor = (u - 1) >> drop  # B < u is certain if B_hi <= floor((u-1) / 2^drop)
    exact: list[Any] | None = None
    k = 1
    while k < 2 * t:
        if k >= 2 and s_bits >= 3 * prec:
            lo, hi = interval_conv_exp_packed(a_lo, a_hi, m, prec, k)
        else:
            lo, hi = interval_conv_exp(a_lo, a_hi, m, prec, k)
        exact = None
        cum_lo = sum(lo[: k // 2])
        cum_hi = sum(hi[: k // 2])
        for ell in range(k // 2, k):
            cum_lo += lo[ell]
            cum_hi += hi[ell]
            if cum_lo >= u_ceil:
                decided: bool = True
            elif cum_hi <= u_floor:
                decided = False
            else:
                if exact is None:
                    exact = approx_conv_exp(bernoulli_vector(num, den, s), m, s, k)
                decided = sum(exact[: ell + 1]) >= u
                if stats is not None:
                    stats["exact"] = stats.get("exact", 0) + 1
                if decided:
                    return min(ell, t)
                continue
            if stats is not None:
                stats["decided"] = stats.get("decided", 0) + 1
            if decided:
                return min(ell, t)
        k *= 2
    return t
