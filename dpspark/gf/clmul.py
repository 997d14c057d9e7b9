"""Carry-less 64x64 -> 128-bit multiplication, the primitive under every GF(2^m) kernel.

On x86-64 CPUs with the PCLMULQDQ instruction (checked in /proc/cpuinfo) the
numba kernels call the LLVM intrinsic ``llvm.x86.pclmulqdq``; elsewhere, or
when the environment variable ``DPSPARK_GF_SOFT_CLMUL=1`` is set, a portable
shift-and-xor loop is used. Both give identical results (a test checks this);
only the speed differs. ``CACHE`` is False in the forced-software mode so that
numba's on-disk cache never serves code compiled for the other primitive, and
when numba has nowhere to write its cache (neither a writable ``__pycache__``
next to this package nor a writable user cache directory, e.g. a read-only
install run with an unwritable HOME): numba would otherwise refuse to define
the kernels at import. Without a cache the kernels compile once per process.
"""

from __future__ import annotations

import os
import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

U64 = np.uint64


def _cpu_has_pclmul() -> bool:
    """True when this CPU advertises PCLMULQDQ (Linux x86-64 only)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return "pclmulqdq" in line.split()
    except OSError:
        return False
    return False


def _cache_probe() -> None:
    """A plain function of this file: numba's cache locators are asked about it."""


def _numba_cache_usable() -> bool:
    """True when numba can place an on-disk cache for functions of this package directory."""
    try:
        from numba.core.caching import FunctionCache

        FunctionCache(_cache_probe)
    except Exception:  # RuntimeError "no locator available" (or an unexpected numba internals change)
        return False
    return True


FORCE_SOFT = os.environ.get("DPSPARK_GF_SOFT_CLMUL", "") not in ("", "0")
HARDWARE = _cpu_has_pclmul() and not FORCE_SOFT
#: numba ``cache=`` flag for every kernel of dpspark.gf.
CACHE = not FORCE_SOFT and _numba_cache_usable()


@intrinsic
def _pclmul(typingctx, a, b):  # type: ignore[no-untyped-def]
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        i64 = ir.IntType(64)
        v2 = ir.VectorType(i64, 2)
        zero = ir.Constant(ir.IntType(32), 0)
        one = ir.Constant(ir.IntType(32), 1)
        va = builder.insert_element(ir.Constant(v2, None), args[0], zero)
        vb = builder.insert_element(ir.Constant(v2, None), args[1], zero)
        fnty = ir.FunctionType(v2, [v2, v2, ir.IntType(8)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.pclmulqdq")
        r = builder.call(fn, [va, vb, ir.Constant(ir.IntType(8), 0)])
        lo = builder.extract_element(r, zero)
        hi = builder.extract_element(r, one)
        return context.make_tuple(builder, signature.return_type, [lo, hi])

    return sig, codegen


@njit(cache=CACHE, inline="always")
def clmul64_hw(a: np.uint64, b: np.uint64) -> tuple[np.uint64, np.uint64]:
    """(lo, hi) words of the carry-less product, via PCLMULQDQ."""
    return _pclmul(a, b)


@njit(cache=CACHE, inline="always")
def clmul64_sw(a: np.uint64, b: np.uint64) -> tuple[np.uint64, np.uint64]:
    """(lo, hi) words of the carry-less product, portable shift-and-xor."""
    lo = U64(0)
    hi = U64(0)
    one = U64(1)
    if (b & one) != U64(0):
        lo ^= a
    for i in range(1, 64):
        if ((b >> U64(i)) & one) != U64(0):
            lo ^= a << U64(i)
            hi ^= a >> U64(64 - i)
    return lo, hi


clmul64 = clmul64_hw if HARDWARE else clmul64_sw
