"""StabilityHistogram with max_rows_per_key = c > 1: tau at count c, (c eps~, delta_c) per key, exactly.

The exact output law is enumerated over every draw (GeoSample, d = 96) for datasets a unit with one key and
up to c rows apart; the (e^(c eps~), delta) gap is computed exactly. Mutants: tau calibrated at count 1
(the c = 1 threshold) and e^eps calibrated for c = 1 both break their claims.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest
from tests.support.hist_support import exact_law

from dpspark.api.config import ReleaseSpec
from dpspark.mechanisms.histogram import stability_histogram, stability_mechanism, stability_threshold
from dpspark.mechanisms.registry import construct
from dpspark.noise import GeoSample
from dpspark.rng import SeededRandom

MECH = GeoSample(n=6, exp_eps=Fraction(2))  # d = 96
DELTA = Fraction(1, 10)
C = 2
# one unit, one key, up to C rows: pairs the unit can separate (adding 1 or 2 to one key). Other keys are
# independent coordinates with identical laws on both sides (the product law of BasicHistogram's test), so
# they add nothing to the gap; single-key datasets keep the enumeration at 96 paths per law.
PAIRS = [({}, {0: 1}), ({}, {0: 2}), ({0: 1}, {0: 2}), ({0: 1}, {0: 3}), ({0: 2}, {0: 4}), ({0: 3}, {0: 5}),
         ({0: 4}, {0: 6})]


def gap(x: dict, y: dict, exp_eps: Fraction) -> Fraction:  # type: ignore[type-arg]
    """The smallest delta with Pr[X in T] <= e^eps Pr[Y in T] + delta for all T (hockey-stick divergence)."""
    return sum((max(Fraction(0), p - exp_eps * y.get(r, Fraction(0))) for r, p in x.items()), Fraction(0))


def law(data: dict[int, int], rows_per_key: int) -> dict:  # type: ignore[type-arg]
    return _law(tuple(sorted(data.items())), rows_per_key)


@cache
def _law(items: tuple[tuple[int, int], ...], rows_per_key: int) -> dict:  # type: ignore[type-arg]
    return exact_law(lambda r: (lambda rel: (rel.indices, rel.counts))(
        stability_histogram(dict(items), 9, MECH.n, MECH, DELTA, r, rows_per_key=rows_per_key)))


def tail(tau: int, count: int) -> Fraction:
    return Fraction(MECH.d - MECH.scaled_cdf(count, tau), MECH.d)


def worst_gap(rows_per_key: int, exp_eps: Fraction) -> Fraction:
    worst = Fraction(0)
    for a, b in PAIRS:
        la, lb = law(a, rows_per_key), law(b, rows_per_key)
        worst = max(worst, gap(la, lb, exp_eps), gap(lb, la, exp_eps))
    return worst


def test_stability_with_c_rows_is_c_eps_delta_c_dp_exactly() -> None:
    tau = stability_threshold(MECH, DELTA, C)
    delta_c = tail(tau, C)
    assert delta_c <= DELTA < tail(tau - 1, C)  # tau is the smallest threshold at count c
    assert tau > stability_threshold(MECH, DELTA, 1)  # the threshold moves up with c
    # M is stochastically increasing in its count: a key reaching e <= c appears with probability <= delta_c
    for e in range(1, C + 1):
        assert tail(tau, e) <= delta_c
    worst = worst_gap(C, MECH.exp_eps**C)
    assert worst <= delta_c
    assert worst == delta_c  # attained on {} vs {0: 2}: the claim is tight
    rel = stability_histogram({0: 2}, 9, MECH.n, MECH, DELTA, SeededRandom(0), rows_per_key=C)
    assert rel.privacy.exp_eps == MECH.exp_eps**C
    assert rel.privacy.delta == delta_c * (1 + Fraction(2, 1 << 128))  # one biased draw's factor
    assert rel.privacy.replacement_delta is None  # the (2 eps, delta) replacement is proved for c = 1 only
    assert rel.parameters["tau"] == tau and rel.parameters["tau_at_count"] == C


def test_mutant_threshold_at_count_one_breaks_its_delta() -> None:
    """The c = 1 calibration (tau at count 1) claims delta_1, but a unit adding 2 rows leaks more."""
    tau_1 = stability_threshold(MECH, DELTA, 1)
    claimed = tail(tau_1, 1)
    la, lb = law({}, 1), law({0: 2}, 1)
    assert gap(lb, la, MECH.exp_eps**C) > claimed


def test_mutant_epsilon_for_one_row_breaks_with_two() -> None:
    """The c = 1 calibration of e^eps (p/q per key, same delta_c) is exceeded between counts 2 and 4."""
    tau = stability_threshold(MECH, DELTA, C)
    assert worst_gap(C, MECH.exp_eps) > tail(tau, C)


def spec(tmp_path: Path, **privacy) -> ReleaseSpec:
    raw = {
        "keys": {"columns": ["k"]},
        "universe": {"kind": "int_range", "lo": 1, "hi": 30},
        "privacy": {"mechanism": "stability", "epsilon": "1", "delta": "1e-6", "max_units": 1000, "unit_column": "u",
                    **privacy},
        "output": {"path": str(tmp_path / "out")},
    }
    return ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)


@pytest.mark.parametrize("k,c", [(1, 3), (2, 2)])
def test_engine_mechanism_states_k_c_eps_and_k_delta_c(tmp_path: Path, k: int, c: int) -> None:
    mech = construct(spec(tmp_path, max_keys_per_unit=k, max_rows_per_key=c))  # accepted, data-free
    counting = mech.counting
    assert counting.n == 1000 * k * c
    assert mech.tau == stability_threshold(counting, mech.threshold_delta, c)
    delta_c = Fraction(counting.d - counting.scaled_cdf(c, mech.tau), counting.d)
    st = mech.release_from_counts([0, 4], [c, 3 * c], SeededRandom(b"rows"), lambda m: None).privacy
    assert st.exp_eps == counting.exp_eps ** (k * c)
    assert st.delta == k * delta_c * (1 + Fraction(2, 1 << 128)) <= Fraction(1, 10**6)
    planned = mech.planned_statement()
    assert (planned.exp_eps, planned.bias_epsilon, planned.delta) == (st.exp_eps, st.bias_epsilon, st.delta)
    # the per-row budget is epsilon / (k c): the stated epsilon is certified within the requested one
    assert counting.exp_eps == stability_mechanism(counting.n, Fraction(1, k * c), Fraction(1, 10**6) / k).exp_eps
