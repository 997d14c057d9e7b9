"""zCDP certificates of the implemented discrete Gaussian, their cross-check and their mutants.

The mixture certificate (any sigma) and the finite alpha-grid Renyi bound
(small m, arb with one-sided rounding, no theorem about Gaussians) must both
certify rho(s) within 0.1% of s^2/(2 sigma^2); a sampler without the uniform
floor must be reported as infinite (unequal supports) or uncertified.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpspark.noise import (
    DGaussError,
    DiscreteGaussian,
    certified_table,
    certify,
    grid_bound,
    l2_rho,
    sigma_grid_next,
    smallest_sigma,
    vector_rho,
)
from dpspark.noise.dgauss_certify import cyclic_weights, verify_weights

ETA = Fraction(1, 1000)


@pytest.mark.parametrize("sigma", ["1", "2", "10", "1000", "10000"])
def test_certified_rho_within_tenth_of_a_percent(sigma: str) -> None:
    mech = DiscreteGaussian(sigma=sigma)
    full = int(sigma) <= 10
    cert = certify(mech, 4, verify_weights=full)
    if not full:  # the full arb re-check of 10^4..10^5 floors takes seconds: check a public sample
        assert verify_weights(mech, range(0, mech.T + 1, 53 if sigma == "1000" else 997)) == []
    assert cert.ok and cert.within(ETA)
    for b in cert.bounds:
        ideal = Fraction(b.shift**2) / (2 * mech.sigma**2)
        assert b.rho is not None and ideal <= b.rho <= (1 + ETA) * ideal
        assert mech.zcdp_rho(b.shift) == b.rho
    assert mech.eta == 0  # default floor: lambda <= 1/(2 sigma^2), so rho(s) is exactly the ideal


@pytest.mark.parametrize("sigma,shifts", [("1", (1, 2, 3, 4)), ("2", (1, 2, 3, 4)), ("10", (1,))])
def test_grid_certifier_agrees(sigma: str, shifts: tuple[int, ...]) -> None:
    """Direct bound on D_alpha of the stored pmf for all alpha > 1 (alpha grid + convexity + D_inf)."""
    mech = DiscreteGaussian(sigma=sigma)
    w = cyclic_weights(mech)
    for s in shifts:
        b = grid_bound(w, s, mech.sigma)
        assert b.rho is not None and b.eta is not None and b.eta <= ETA, (s, b)


def test_no_floor_mutant_is_infinite() -> None:
    """Truncation without the uniform floor: some outputs are impossible under a neighbour."""
    mech = DiscreteGaussian(sigma="3", floor=0, data_radius=3)
    assert mech.weight_min() == 0
    for method in ("mixture", "grid"):
        cert = certify(mech, 2, method=method)
        assert not cert.ok and all(b.rho is None for b in cert.bounds), method
    with pytest.raises(DGaussError):
        mech.zcdp_rho(1)
    # without zero weights (R = T) the mixture certificate still refuses: h is not certified positive
    mech = DiscreteGaussian(sigma="3", floor=0)
    assert not certify(mech, 1).ok


def test_small_floor_reports_eta_above_target() -> None:
    mech = DiscreteGaussian(sigma="10", floor=8)
    cert = certify(mech, 4)
    assert cert.ok and cert.eta_max is not None and cert.eta_max > ETA
    assert not cert.within(ETA)
    assert mech.zcdp_rho(1) == mech.lam > mech.rho0(1)


def test_vector_composition_and_l2() -> None:
    mech = DiscreteGaussian(sigma="5")
    shifts = [3, -1, 0, 2]
    assert vector_rho(mech, shifts) == Fraction(9 + 1 + 0 + 4, 50)
    assert l2_rho(mech, 4) == Fraction(16, 50) >= vector_rho(mech, shifts)
    weak = DiscreteGaussian(sigma="5", floor=20)
    assert l2_rho(weak, 4) >= vector_rho(weak, shifts) > vector_rho(mech, shifts)


def test_smallest_sigma() -> None:
    # sigma^2 >= Delta^2 / (2 rho): 3/sqrt(1/50) = 21.21... -> 21.3 on the 3-digit grid
    assert smallest_sigma("1/100", 3) == Fraction(213, 10)
    assert smallest_sigma("1/2", 1) == 1
    s = smallest_sigma("1/1000", 10)
    assert s == 224 and l2_rho(DiscreteGaussian(sigma=s), 10) <= Fraction(1, 1000)
    assert l2_rho(DiscreteGaussian(sigma=Fraction(223)), 10) > Fraction(1, 1000)
    assert sigma_grid_next(Fraction(12341, 10)) == 1240 and sigma_grid_next(Fraction(1)) == 1
    with pytest.raises(DGaussError):
        smallest_sigma("1e-12", 10)


def test_certified_table_rows() -> None:
    rows = certified_table(["1", "3/2", 7])
    assert [r["sigma"] for r in rows] == ["1", "3/2", "7"]
    assert all(r["ok"] and r["eta_max"] == "0" for r in rows)
    assert rows[2]["rho"][0] == str(Fraction(1, 98))


def test_statement_composes_coordinates_under_add_remove() -> None:
    from fractions import Fraction

    from dpspark.noise import DiscreteGaussian
    from dpspark.privacy import ZCDP, AddRemove

    g = DiscreteGaussian(sigma=4)
    st = g.statement([1, 2, 1], n=100)
    assert isinstance(st.measure, ZCDP) and st.relation == AddRemove(100)
    assert st.rho == g.zcdp_rho(1) * 2 + g.zcdp_rho(2) == Fraction(1 + 4 + 1, 2 * 16)  # eta = 0: exactly sum s^2/(2 sigma^2)
    cks = st.to_approx_dp("1/1000000")  # the certified zCDP -> (eps, delta) conversions
    bs = st.to_approx_dp("1/1000000", method="bun_steinke")
    assert cks.delta == bs.delta == Fraction(1, 10**6)
    assert cks.epsilon.le(bs.epsilon.upper()) and bs.epsilon.le(Fraction(7, 2))  # rho + 2 sqrt(rho ln 1e6) ~ 3.40
