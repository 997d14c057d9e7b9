"""CompactHistogram with max_rows_per_key = c > 1: M on [0, k c n], l = k n + 1, per key c eps~ + sampler_epsilon.

Exact check over GF(2^6) (the exhaustive law of test_compact_exhaustive with l decoupled from the count
range): one unit (n = 1, k = 1) adding up to c rows to one key of a 3-key universe, l = 2, M on [0, c].
Every polynomial's probability ratio between the empty dataset and a key of count e <= c is within
(p/q)^c e^{sampler_epsilon}, the statement; the c = 1 calibration's claim (p/q) e^{sampler_epsilon} is
exceeded (the mutant). Then the plan's certification, the construction's l, and a release written and
read back through the reader's checks.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.unit.compact.test_compact_exhaustive import law

from dpspark.api.config import load_config
from dpspark.engine.runner import run_release
from dpspark.exact import exp_lower_bound, within_epsilon
from dpspark.lookup import open_release
from dpspark.mechanisms.compact import RoundedCdfSampler, compact_histogram
from dpspark.mechanisms.compact.plan import plan_compact
from dpspark.mechanisms.compact.privacy import compact_privacy
from dpspark.noise import FastSample, GeoSample
from dpspark.rng import SeededRandom

M_BITS = 6
UNIVERSE = 3


def worst_ratio(sampler: RoundedCdfSampler, c: int) -> Fraction:
    """max over polynomials p and keys x, counts 1 <= e <= c of both ratios Pr_D[p] / Pr_D'[p], exactly."""
    ell = 2  # k n + 1 with k = n = 1: at most one non-zero key
    empty, den0 = law(sampler, (0,) * UNIVERSE, ell)
    worst = Fraction(0)
    for x in range(UNIVERSE):
        for e in range(1, c + 1):
            counts = tuple(e if i == x else 0 for i in range(UNIVERSE))
            pmf, den = law(sampler, counts, ell)
            assert np.all(pmf != 0) and np.all(empty != 0)  # full support: finite ratios
            for a, da, b, db in ((pmf, den, empty, den0), (empty, den0, pmf, den)):
                j = int(np.argmax((a * db) / (b * da)))  # float only to locate the max; the value is exact below
                worst = max(worst, Fraction(int(a[j]) * db, int(b[j]) * da))
    return worst


@pytest.mark.parametrize("mech,c", [(GeoSample(n=2, exp_eps=Fraction(3, 2)), 2), (GeoSample(n=3, exp_eps=Fraction(2)), 3)],
                         ids=["c=2", "c=3"])
def test_exact_law_within_c_eps_plus_sampler(mech: GeoSample, c: int) -> None:
    sampler = RoundedCdfSampler(mech, M_BITS)
    s_eps = sampler.sampler_epsilon()
    assert 0 < s_eps < 1
    worst = worst_ratio(sampler, c)
    assert worst <= mech.exp_eps**c * exp_lower_bound(s_eps)  # within the statement (a certified lower e^s)
    assert worst > mech.exp_eps * (1 + s_eps + s_eps * s_eps)  # mutant: > the c = 1 claim (e^s <= 1+s+s^2, s <= 1)


def test_plan_certifies_c_ln_pq_and_the_c1_calibration_would_not() -> None:
    n_units, k, c, size = 50, 2, 3, 1 << 40
    eps_key = Fraction(1, k)
    plan = plan_compact(n_units * k * c, size, eps_key, Fraction(1, 20), rows_per_key=c)
    assert plan.ell == n_units * k + 1 and plan.mechanism.n == n_units * k * c
    detail = compact_privacy(plan.mechanism, plan.sampler, 128)
    extra = detail.sampler_epsilon + detail.rng_bias
    assert within_epsilon(plan.mechanism.exp_eps**c, extra, eps_key)
    one = plan_compact(n_units * k * c, size, eps_key, Fraction(1, 20))  # mutant: calibrated for c = 1
    d1 = compact_privacy(one.mechanism, one.sampler, 128)
    assert not within_epsilon(one.mechanism.exp_eps**c, d1.sampler_epsilon + d1.rng_bias, eps_key)


def test_the_polynomial_has_l_coefficients_and_refuses_more_keys() -> None:
    mech = FastSample(n=12, gamma="1/64", exp_eps=Fraction(5, 4))
    rel = compact_histogram({0: 4, 5: 3}, 100, 12, mech, SeededRandom(b"ell"), epsilon2="1", m=64, ell=5)
    assert rel.ell == 5 and rel.coefficients.shape == (5, 1)
    assert rel.lookup([0, 5, 7])[:2] == [rel.lookup([0])[0], rel.lookup([5])[0]]
    with pytest.raises(ValueError, match="at least l non-zero keys"):
        compact_histogram({i: 1 for i in range(5)}, 100, 12, mech, SeededRandom(b"ell"), epsilon2="1", m=64, ell=5)


def test_release_round_trip_with_rows_per_key(tmp_path: Path) -> None:
    """Session-free engine run on a local file: the reader's checks accept l = k n + 1 with M on [0, k c n]."""
    users = [1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3]
    keys = [4, 4, 4, 4, 4, 6, 6, 6, 2, 2, 9]
    pq.write_table(pa.table({"u": pa.array(users, pa.int64()), "k": pa.array(keys, pa.int64())}), tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text("""
[input]
path = "in.parquet"
[keys]
columns = ["k"]
[universe]
kind = "int_range"
lo = 0
hi = 9
[privacy]
mechanism = "compact"
epsilon = "2"
max_units = 10
unit_column = "u"
max_keys_per_unit = 2
max_rows_per_key = 3
m = 64
[output]
path = "rel"
""")
    cfg = load_config(tmp_path / "c.toml")
    out = run_release(cfg, rng=SeededRandom(b"rows"), progress=lambda _m: None)
    rel = open_release(out)
    assert rel.ell == 2 * 10 + 1
    man = rel.manifest
    assert int(man.compact.counting["n"]) == 2 * 3 * 10
    step = Fraction(int(man.compact.counting["exp_eps"]["num"]), int(man.compact.counting["exp_eps"]["den"]))
    assert man.add_remove.exp_eps == step**6
    assert man.add_remove.bias_epsilon == 2 * (man.compact.eps_a if man.compact.eps_a > man.compact.eps_b
                                               else man.compact.eps_b) + 2 * man.compact.rng_bias
    assert within_epsilon(man.add_remove.exp_eps, man.add_remove.bias_epsilon, Fraction(2))
    assert len(rel.counts(list(range(10)))) == 10
