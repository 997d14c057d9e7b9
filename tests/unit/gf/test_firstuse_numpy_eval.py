"""Issue 35 §1: the numpy evaluation path (no numba) is bit-identical to the numba Horner kernels."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpspark.gf import GF2m, horner, numpy_eval
from dpspark.gf.moduli import MODULI

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("m", sorted(MODULI))
def test_numpy_evaluation_equals_numba_horner(m: int) -> None:
    field = GF2m(m)
    gen = np.random.default_rng(m)  # test-input generation only
    # lengths around the block size and its powers (levels of one, two and three blocks; padding)
    for ell in (1, 2, 3, 63, 64, 65, 127, 4095, 4096, 4097, 9000):
        coeffs = gen.integers(0, 2**64, (ell, field.w), dtype=np.uint64)
        for x in (gen.integers(0, 2**64, field.w, dtype=np.uint64), field.zeros(()), field.ones(())):
            x0, c0 = x.copy(), coeffs.copy()
            assert np.array_equal(numpy_eval.evaluate(m, coeffs, x), horner(field, coeffs, x)), (m, ell)
            assert np.array_equal(x, x0) and np.array_equal(coeffs, c0)  # the inputs are left as they were
    points = gen.integers(0, 2**64, (5, field.w), dtype=np.uint64)
    coeffs = gen.integers(0, 2**64, (300, field.w), dtype=np.uint64)
    expect = np.stack([horner(field, coeffs, p) for p in points])
    assert np.array_equal(numpy_eval.evaluate_many(m, coeffs, points), expect)
    assert np.array_equal(numpy_eval.evaluate(m, coeffs[:0], points[0]), field.zeros(()))


@pytest.mark.parametrize("m", sorted(MODULI))
def test_tables_multiply_like_the_field(m: int) -> None:
    """A byte table of X times y equals GF2m.mul, including the reduction of every top bit."""
    field = GF2m(m)
    gen = np.random.default_rng(7 * m)  # test-input generation only
    x = gen.integers(0, 2**64, field.w, dtype=np.uint64)
    ys = np.concatenate([gen.integers(0, 2**64, (50, field.w), dtype=np.uint64),
                         np.full((1, field.w), np.uint64(2**64 - 1))])
    got = numpy_eval.mul_fixed(m, numpy_eval.tables(m, x[None]), ys)
    assert np.array_equal(got, field.mul(np.broadcast_to(x, ys.shape).copy(), ys))


def test_numpy_evaluation_imports_no_numba() -> None:
    code = ("import sys, numpy as np\n"
            "from dpspark.gf import numpy_eval\n"
            "from dpspark.gf.field import GF2m\n"
            "f = GF2m(128)\n"
            "v = numpy_eval.evaluate(128, np.ones((70, 2), np.uint64), f.from_int(3))\n"
            "print(f.to_int(v), 'numba' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    value, numba_loaded = proc.stdout.split()
    field = GF2m(128)
    assert int(value) == field.to_int(horner(field, np.ones((70, 2), np.uint64), field.from_int(3)))
    assert numba_loaded == "False"


def test_the_numpy_path_takes_one_key_or_a_few_keys_of_bounded_work() -> None:
    code = ("from dpspark.mechanisms.compact.evaluation import NUMPY_MAX_KEYS as K, NUMPY_MAX_WORK as W, use_numpy\n"
            "print(use_numpy(1, 10**9, 256), use_numpy(K, W // (4 * K), 128), use_numpy(K + 1, 10, 128),\n"
            "      use_numpy(4, W // 64, 256), use_numpy(5, W // 64, 256))\n"
            "import numpy as np\n"
            "from dpspark.gf import GF2m, horner_many\n"
            "f = GF2m(128)\n"
            "horner_many(f, np.ones((40, 2), np.uint64), np.ones((3, 2), np.uint64))\n"
            "print(use_numpy(1, 10, 128))\n")  # a process holding the numba kernels uses them
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "True", "False", "True", "False", "False"]
