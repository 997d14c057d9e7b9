"""Answers remove no unit (issue 32 §3): with more units than max_units, bounded-noise answers are unaffected and
Gaussian answers are released at the edge of their noise window, never wrapped mod m."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dpspark.mechanisms.answers.mechanism import window_clamp

PEOPLE, DECLARED = 61_697, 50_000
COUNT = [{"name": "people", "kind": "count"}]


def _answer(mechanism: str, tmp_path: Path, n: int = PEOPLE) -> tuple[dict[str, Any], Any]:
    import dpspark
    from dpspark.rng import SeededRandom

    t = pa.table({"pid": np.arange(n, dtype=np.int64)})
    with dpspark.Session(t, unit_column="pid", max_units=DECLARED, rng=SeededRandom(5)) as s:
        r = s.release(mechanism=mechanism, epsilon="1", delta="1e-6", output=tmp_path / mechanism,
                      sections={"queries": COUNT})
    return r.to_pandas().to_dict("records")[0], r


def test_the_new_users_case_bounded_noise_reads_every_unit(tmp_path: Path) -> None:
    row, _ = _answer("bounded_noise", tmp_path)
    assert abs(row["value"] - PEOPLE) <= row["R"]  # no unit dropped: within R of the true 61,697 (probability 1)


def test_the_new_users_case_gaussian_is_at_the_window_edge_not_wrapped(tmp_path: Path) -> None:
    """Before: (61,697 + Z) mod m came out as -38,423. Now the answer is the window's edge n plus noise."""
    row, r = _answer("gaussian", tmp_path)
    t = r.section["noise"]["dgauss"]["T"]
    assert abs(row["value"] - DECLARED) <= t


def test_within_max_units_the_gaussian_answer_is_unchanged(tmp_path: Path) -> None:
    row, _ = _answer("gaussian", tmp_path, n=DECLARED - 3)
    assert abs(row["value"] - (DECLARED - 3)) <= 60


def test_the_clamp_keeps_sensitivity_one_and_never_wraps() -> None:
    """c is the identity on [-n, n] and 1-Lipschitz (neighbours' integers differ by <= 1 after it), and c + Z
    stays in [-R, R] for every |Z| <= T, so the wrap mod m = 2R + 1 never moves a released value."""
    from dpspark.noise.dgauss import DiscreteGaussian

    n = 40
    dg = DiscreteGaussian(sigma=2, data_radius=n)
    for v in range(-3 * n, 3 * n):
        c = window_clamp(v, n)
        assert c == v if -n <= v <= n else c == (n if v > 0 else -n)
        assert abs(window_clamp(v + 1, n) - c) <= 1
        for z in (-dg.T, 0, dg.T):
            assert dg.wrap(c + z, 0) == c + z


@pytest.mark.parametrize("name", ["gaussian", "bounded_noise"])
def test_the_dry_run_says_no_unit_is_removed(name: str) -> None:
    from dpspark.mechanisms.answers.family import EXCESS_UNITS

    assert EXCESS_UNITS[name].startswith("none removed")
    assert ("edge of the noise window" in EXCESS_UNITS[name]) == (name == "gaussian")
