"""PureSparseHistogram with max_rows_per_key = c > 1: group privacy over the unit's k c rows, exactly.

The exact law of the tiny instance of test_hist_pure_sparse (|X| = 5, N = 2, GeoSample e^eps~ = 2) is the
law of one unit with k = 1 and c = 2 (N = k c n, n = 1): a unit adds 1 or 2 to one key. Every output's ratio
must be <= (p/q)^2, the statement; the c = 1 calibration (e^eps = p/q) is exceeded (the mutant).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from tests.unit.histogram.test_hist_pure_sparse import MECH, output_range, pure_law

from dpspark.api.config import ConfigError, ReleaseSpec
from dpspark.mechanisms.histogram.pure_sparse import pure_sparse_bias_draws
from dpspark.mechanisms.registry import construct
from dpspark.rng import SeededRandom, bias_epsilon


def test_one_unit_of_two_rows_is_exactly_within_p_over_q_squared() -> None:
    laws = {d: pure_law(dict(d)) for d in ((), ((0, 1),), ((0, 2),), ((3, 2),))}
    worst = Fraction(0)
    for a, b in (((), ((0, 1),)), ((), ((0, 2),)), ((), ((3, 2),))):  # the unit's one key gets 1 or 2 rows
        for x, y in ((a, b), (b, a)):
            assert set(laws[x]) == set(laws[y]) == output_range(5, 2)  # full support on both sides
            for r, px in laws[x].items():
                assert px <= MECH.exp_eps**2 * laws[y][r]  # the group-privacy statement (p/q)^(k c)
                worst = max(worst, px / laws[y][r])
    assert worst > MECH.exp_eps  # mutant: the c = 1 calibration's claim e^eps = p/q is violated


def spec(tmp_path: Path, hi: int, **privacy) -> ReleaseSpec:
    raw = {
        "keys": {"columns": ["k"]},
        "universe": {"kind": "int_range", "lo": 1, "hi": hi},
        "privacy": {"mechanism": "pure_sparse", "epsilon": "1", "max_units": 5, "unit_column": "u", **privacy},
        "output": {"path": str(tmp_path / "out")},
    }
    return ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)


@pytest.mark.parametrize("k,c", [(1, 2), (2, 3)])
def test_engine_mechanism_states_group_privacy_over_k_c_rows(tmp_path: Path, k: int, c: int) -> None:
    mech = construct(spec(tmp_path, 1 << 20, max_keys_per_unit=k, max_rows_per_key=c))
    counting = mech.counting
    assert mech.n_range == counting.n == 5 * k * c
    st = mech.release_from_counts([0, 9], [c, 2 * c], SeededRandom(b"rows"), lambda m: None).privacy
    per_row = bias_epsilon(pure_sparse_bias_draws(mech.n_range, 1 << 20, counting, mech.mixing), SeededRandom(b"").lam)
    assert st.exp_eps == counting.exp_eps ** (k * c)
    assert st.bias_epsilon == k * c * per_row  # group privacy: every row step carries its own rng bias
    assert st.delta == 0
    planned = mech.planned_statement()
    assert (planned.exp_eps, planned.bias_epsilon) == (st.exp_eps, st.bias_epsilon)


def test_universe_bound_includes_c(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least 2kcn\\+1 = 61 keys"):
        spec(tmp_path, 60, max_keys_per_unit=2, max_rows_per_key=3)
    assert construct(spec(tmp_path, 61, max_keys_per_unit=2, max_rows_per_key=3)).n_range == 30
