"""Issue 31 §3: the Gaussian learner never inverts a singular preconditioner after the spend.

At small n a whitening step of a very noisy estimate can quantise the preconditioner A to a singular matrix;
main raised ``LinAlgError: Singular matrix`` inside the data pass (a lost spend). A^-1 is now taken with its
singular values floored at one grid step (:func:`~dpspark.mechanisms.gaussian_model.covariance.floored_inverse`),
post-processing of public and noisy values only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpspark.mechanisms.gaussian_model.covariance import covariance_from, floored_inverse

BITS = 12


def test_a_healthy_preconditioner_gets_its_exact_inverse() -> None:
    a = ((4096, 17), (-3, 2048))
    real = np.array(a, dtype=np.float64) / 2.0 ** BITS  # report
    assert np.allclose(floored_inverse(a, BITS) @ real, np.eye(2), atol=1e-12)  # report


@pytest.mark.parametrize("a", [((0, 0), (0, 4096)), ((4096, 4096), (4096, 4096)), ((0, 0), (0, 0))])
def test_a_singular_preconditioner_is_inverted_with_floored_singular_values(a: tuple) -> None:
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(np.array(a, dtype=np.float64))  # report: what main did
    inv = floored_inverse(a, BITS)
    assert np.isfinite(inv).all()
    assert np.linalg.norm(inv, 2) <= 2.0 ** BITS * (1 + 1e-9)  # report: at most 1 / (one grid step)
    cov = covariance_from(a, np.eye(2), BITS)
    assert np.isfinite(cov).all() and np.array_equal(cov, cov.T)


def test_small_input_learner_release_completes(tmp_path: Path) -> None:
    """Five units, seed 1: on main (6010be4) this release failed after the spend (a singular A in the mean
    step's solve); now it completes and its estimates are finite."""
    import pyarrow as pa

    import dpspark
    from dpspark.rng import SeededRandom

    rng = np.random.default_rng(1)
    n = 5
    table = pa.table({"uid": list(range(n)), "a": rng.normal(0, 2, n), "b": rng.normal(0, 1, n)})
    with dpspark.Session(table, max_units=1000, unit_column="uid", rng=SeededRandom(1)) as s:
        rel = s.release(mechanism="gaussian_learner", epsilon="1", delta="1e-6", output=tmp_path / "r",
                        sections={"gaussian": {"columns": ["a", "b"], "radius": "10", "kappa": "100"}})
    assert np.isfinite(rel.mean()).all() and np.isfinite(rel.covariance()).all()


def test_a_healthy_preconditioner_is_solved_bit_for_bit_as_before() -> None:
    """The seeded releases stay bit-identical (tests/system/e2e/test_golden_releases.py): np.linalg.inv and
    np.linalg.solve, unchanged, whenever every singular value is at least one grid step."""
    a = ((4096, 17), (-3, 2048))
    real = np.array(a, dtype=np.float64) / 2.0 ** BITS  # report
    rhs = np.array([0.3, -1.7])  # report
    assert np.array_equal(floored_inverse(a, BITS), np.linalg.inv(real))
    assert np.array_equal(floored_inverse(a, BITS, rhs), np.linalg.solve(real, rhs))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(np.zeros((2, 2)), rhs)  # report: what main did on a singular A
    assert np.isfinite(floored_inverse(((0, 0), (0, 0)), BITS, rhs)).all()
