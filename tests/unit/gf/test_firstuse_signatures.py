"""Issue 35 §1: a compact build compiles each GF(2^m) kernel once (one signature, no literal or read-only copies).

numba compiles a kernel once per argument-type tuple. A constant argument in a call between kernels is a
``Literal[int]`` type of its own, and a read-only array (``np.broadcast_to`` returns one even when nothing is
broadcast) another: each such copy cost seconds of a cold build's compile. After the build's kernel run
(:func:`dpspark.gf.warmup.compile_build`, in a fresh process so that no other test's calls count), every
dispatcher of dpspark.gf has at most one signature, and none has a literal or read-only argument.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from dpspark.gf import GF2m, modulus_int

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import json
from numba.core.registry import CPUDispatcher
from dpspark.gf import additive_fft, kernels, polymul_kernels, transposed_fft, warmup
warmup.compile_build()
out = {}
for mod in (kernels, polymul_kernels, additive_fft, transposed_fft):
    for name in dir(mod):
        obj = getattr(mod, name)
        if isinstance(obj, CPUDispatcher) and obj.__module__ == mod.__name__ and obj.signatures:
            out[mod.__name__ + "." + name] = [str(sig) for sig in obj.signatures]
# the warmup's table of build signatures, in numba's words, for the kernels that table names
table = {}
for name, (module, args) in warmup.BUILD_SIGNATURES.items():
    table["dpspark.gf." + module + "." + name] = [str(tuple(warmup._types(a) for a in args))]
print(json.dumps([out, table]))
"""


def test_a_build_compiles_each_kernel_for_one_signature() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sigs, table = json.loads(proc.stdout.strip().splitlines()[-1])
    # the warmup compiles each build kernel ahead for exactly the signature the build gives it (a kernel the
    # build reaches only as another's callee, e.g. school_unreduced, has no signature of its own from a warm cache)
    ran = {name for name in table if name in sigs}
    assert {"dpspark.gf.kernels.mul_arrays", "dpspark.gf.additive_fft.afft_forward_block",
            "dpspark.gf.transposed_fft.walk_block", "dpspark.gf.polymul_kernels.monic_level_products"} <= ran
    assert {name: sigs[name] for name in ran} == {name: table[name] for name in ran}
    assert "dpspark.gf.kernels.mul_arrays" in sigs and "dpspark.gf.transposed_fft.walk_block" in sigs
    several = {name: s for name, s in sigs.items() if len(s) > 1}
    assert not several, several
    odd = {name: s for name, s in sigs.items() if "Literal" in s[0] or "True, aligned" in s[0]}
    assert not odd, odd  # Array(uint64, 2, 'C', True, ...) is a read-only array


def _mul_int(x: int, y: int, modulus: int, m: int) -> int:
    """x * y in GF(2^m) on Python ints: carry-less product, then reduction by the modulus (independent reference)."""
    prod = 0
    for i in range(y.bit_length()):
        if y >> i & 1:
            prod ^= x << i
    for i in range(prod.bit_length() - 1, m - 1, -1):
        if prod >> i & 1:
            prod ^= modulus << (i - m)
    return prod


def test_products_of_read_only_inputs_are_exact_and_leave_the_inputs_alone() -> None:
    field = GF2m(128)
    modulus = modulus_int(128)
    gen = np.random.default_rng(7)
    a = gen.integers(0, 1 << 63, (5, 2), dtype=np.uint64)
    b = gen.integers(0, 1 << 63, (5, 2), dtype=np.uint64)
    ro_a, ro_b = a.copy(), b.copy()
    ro_a.flags.writeable = False
    ro_b.flags.writeable = False
    xs, ys = field.to_int(a), field.to_int(b)
    assert field.to_int(field.mul(ro_a, ro_b)) == [_mul_int(x, y, modulus, 128) for x, y in zip(xs, ys)]
    assert np.array_equal(ro_a, a) and not ro_a.flags.writeable
    # one row broadcast against five
    assert field.to_int(field.mul(ro_a, ro_b[:1])) == [_mul_int(x, ys[0], modulus, 128) for x in xs]


SMALL = """
import importlib, json, sys
from dpspark.gf import GF2m, warmup as W
from dpspark.mechanisms.compact.construct import conditioned_polynomial
from dpspark.rng import SeededRandom
f = GF2m(64)
ell = int(sys.argv[1])
for k in (ell - 1, ell // 2):  # the most points, and the most balanced final product
    conditioned_polynomial(f, ell, f.from_int(range(k)), f.from_int(range(1, k + 1)), SeededRandom(k))
ran = [name for name in sorted(W.FFT_KERNELS)
       if getattr(importlib.import_module("dpspark.gf." + W.BUILD_SIGNATURES[name][0]), name).signatures]
print(json.dumps(ran))
"""


def _fft_kernels_run(ell: int) -> list[str]:
    # no warmup in the probe: only the kernels the build itself calls get a signature
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DPSPARK_GF_SKIP_WARMUP": "1"}
    proc = subprocess.run([sys.executable, "-c", SMALL, str(ell)], cwd=ROOT, capture_output=True, text=True,
                          timeout=1800, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_build_below_the_fft_bound_runs_no_fft_kernel_and_the_warmup_leaves_them_out() -> None:
    """The warmup of a small build (l <= FFT_THRESHOLD, public) skips the FFT kernels: no |S| < l reaches them."""
    from dpspark.gf import warmup
    from dpspark.gf.poly import FFT_THRESHOLD

    ell = FFT_THRESHOLD
    assert not warmup.build_kernels(ell) & warmup.FFT_KERNELS
    assert _fft_kernels_run(ell) == []
    # the bound is tight: one coefficient more and a build runs the FFT, which the warmup then compiles
    assert _fft_kernels_run(ell + 1)
    assert warmup.FFT_KERNELS <= warmup.build_kernels(ell + 1)
