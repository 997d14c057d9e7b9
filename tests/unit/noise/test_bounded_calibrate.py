"""Calibration API, the CLI, and the accuracy statements of the bounded noise (95% coverage, probability-1 bound)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from dpspark.cli.app import main
from dpspark.noise.bounded import BoundedNoise
from dpspark.noise.bounded_calibrate import CalibrationRefused, bound_with_probability, calibrate
from dpspark.rng import SeededRandom


def test_calibrate_k100_beats_authors_code() -> None:
    """Figure 1 point k=100, eps=0.1, delta=1e-10: certified R within 1% of the authors' code (8.9149) or below."""
    cal = calibrate(100, "0.1", "1e-10")
    scale = math.sqrt(100 * math.log(1e10)) / 0.1  # report
    assert cal.certified_delta <= cal.delta == Fraction(1, 10**10)
    assert cal.R == cal.M - 1 and cal.grid == 1
    assert cal.M / scale <= 1.01 * 8.914870743120252  # report
    assert 0 < cal.bound95 < cal.R


def test_calibrate_rejects_floats_and_bad_input() -> None:
    with pytest.raises(TypeError, match="float"):
        calibrate(10, 0.1, "1e-6")  # type: ignore[arg-type]
    with pytest.raises(CalibrationRefused):
        calibrate(10, "0.1", "1e-6", sensitivity=0)
    with pytest.raises(CalibrationRefused):
        calibrate(10, "0.1", "1")
    with pytest.raises(CalibrationRefused):
        calibrate(0, "0.1", "1e-6")


def test_sensitivity_and_public_grid() -> None:
    """Delta = 2 needs about twice the M; a public grid divides the sensitivity and adds the rounding to R."""
    c1 = calibrate(50, "1", "1e-8")
    c2 = calibrate(50, "1", "1e-8", sensitivity=2)
    assert 1.8 < c2.M / c1.M < 2.2  # report
    g = calibrate(50, "1", "1e-8", sensitivity=100, grid=50)
    assert g.grid_sensitivity == 2 and g.M == c2.M
    assert g.R == 50 * (g.M - 1) + 25
    assert g.certified_delta <= g.delta


@pytest.mark.slow
def test_default_grid_for_large_sensitivity() -> None:
    c100 = calibrate(50, "1", "1e-8", sensitivity=100)
    assert c100.grid == 7 and c100.grid_sensitivity == 15
    assert c100.R == 7 * (c100.M - 1) + 3
    assert c100.certified_delta <= c100.delta


def test_cli_prints_only_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["calibrate", "bounded-noise", "--k", "1e3", "--epsilon", "0.1", "--delta", "1e-10"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out["M"], int) and out["k"] == 1000
    assert Fraction(out["certified_delta"]) <= Fraction(1, 10**10)
    for key in ("R_over_scale", "bounded95_over_scale", "gaussian_sigma_over_scale"):
        assert isinstance(out[key], float)
    assert set(out["gaussian_max_error_over_scale"]) == {"0.5", "0.05", "0.001", "1e-06"}
    g = out["gaussian_max_error_over_scale"]
    assert g["0.5"] < g["0.05"] < g["0.001"] < g["1e-06"]
    # BW18 sigma at eps=0.1, delta=1e-10 is 1.1296 * scale whatever k (the authors' code gives the same)
    assert abs(out["gaussian_sigma_over_scale"] - 1.12964) < 1e-3  # report


def _critical_count(n: int, alarm: Fraction) -> int:
    """Least c with Pr[Binom(n, 1/20) > c] <= alarm, in exact integers (20^n Pr = sum C(n,x) 19^(n-x))."""
    terms = [math.comb(n, x) * 19 ** (n - x) for x in range(n + 1)]
    tail, total = 0, 20**n
    for c in range(n, -1, -1):  # tail = sum_{x > c}
        if tail * alarm.denominator > alarm.numerator * total:
            return c + 1
        tail += terms[c]
    return 0


def test_95_percent_bound_coverage_and_probability_one_bound() -> None:
    """Batches of k draws exceed the certified 95% bound at rate <= 5% (false alarm <= 1e-6); a per-query bound fails.

    Every drawn value also satisfies the probability-1 bound |noise| <= M - 1.
    """
    k, M, bits, batches = 20, 60, 96, 1200
    noise = BoundedNoise(M, "p2", bits)
    b95 = bound_with_probability(M, "p2", bits, k, Fraction(1, 20))
    broken = bound_with_probability(M, "p2", bits, 1, Fraction(1, 20))  # forgets the max over k answers
    assert broken < b95
    # critical count: Pr[Binom(batches, 1/20) > c] <= 1e-6
    c = _critical_count(batches, Fraction(1, 10**6))
    assert 60 < c < 120
    rng = SeededRandom(2026)
    over = over_broken = 0
    for _ in range(batches):
        xs = noise.draw_many(k, rng)
        assert max(abs(x) for x in xs) <= M - 1
        m = max(abs(x) for x in xs)
        over += m > b95
        over_broken += m > broken
    assert over <= c
    assert over_broken > c  # the test has teeth


@pytest.mark.slow
def test_large_M_rounds_to_a_public_grid_that_fits_a_table() -> None:
    """Issue 12 section 1: beyond the 2^24 table, answers go to a public grid and the rounding is added to R."""
    from dpspark.noise.bounded import MAX_TABLE_M

    k, eps, delta = 10**8, "0.1", "1e-10"
    one = calibrate(k, eps, delta)  # Delta = 1: M ~ 2.6e6
    assert one.grid == 1 and one.tabulable
    cal = calibrate(k, eps, delta, sensitivity=10)  # grid 1 would need M ~ 2.6e7 > 2^24
    assert 10 * one.M > MAX_TABLE_M
    assert cal.grid >= 2 and cal.tabulable and cal.M <= MAX_TABLE_M
    assert cal.grid_sensitivity == -(-10 // cal.grid)
    assert cal.R == cal.grid * (cal.M - 1) + cal.grid // 2  # the rounding |G round(q/G) - q| <= G//2 is in R
    assert cal.certified_delta <= cal.delta
    assert cal.bound95 == cal.grid * bound_with_probability(cal.M, "p2", cal.bits, k, Fraction(1, 20)) + cal.grid // 2


def test_sensitivity_one_above_the_table_limit_is_certified_but_not_tabulable() -> None:
    """A count (1 grid unit) with M > 2^24: no grid shrinks M, so the calibration says no table is built."""
    cal = calibrate(10**10, "0.1", "1e-10")
    assert cal.M > 1 << 24 and not cal.tabulable and cal.grid == 1
    assert cal.certified_delta <= cal.delta
    assert any("no sampling table" in n for n in cal.notes)
    with pytest.raises(Exception, match="table limit"):
        cal.noise()


@pytest.mark.slow
@pytest.mark.parametrize("eps,delta", [("0.1", "1e-10"), ("0.1", "1e-250"), ("1e-7", "1e-10"), ("1", "1e-10")])
def test_cli_k_1e10_fields_and_time(eps: str, delta: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 12 section 2: the CLI's JSON fields at k = 10^10, and <= 10 s (scaled by the load of a 2-core machine)."""
    import os
    import time

    t0 = time.perf_counter()
    assert main(["calibrate", "bounded-noise", "--k", "1e10", "--epsilon", eps, "--delta", delta]) == 0
    secs = time.perf_counter() - t0  # report
    out = json.loads(capsys.readouterr().out)
    d, e = Fraction(delta), Fraction(eps)
    assert out["k"] == 10**10 and isinstance(out["M"], int) and out["method"] == "chernoff"
    assert Fraction(out["certified_delta"]) <= d
    scale = math.sqrt(10**10 * (math.log(d.denominator) - math.log(d.numerator))) / float(e)  # report
    assert math.isclose(out["R_over_scale"], out["M"] / scale, rel_tol=1e-12)  # report
    assert math.isclose(out["bounded95_over_scale"], out["bounded95"] / scale, rel_tol=1e-12)  # report
    assert 0 < out["bounded95_over_scale"] < out["R_over_scale"] < 6  # report
    assert isinstance(out["gaussian_sigma_over_scale"], float)
    g = out["gaussian_max_error_over_scale"]
    assert list(g) == ["0.5", "0.05", "0.001", "1e-06"] and all(isinstance(v, float) for v in g.values())
    assert secs <= 10 * max(1.0, os.getloadavg()[0] / 2)  # report


def test_cli_pld_method_is_certified_and_below_chernoff(capsys: pytest.CaptureFixture[str]) -> None:
    """--method pld: a certified PLD composition of the implemented pmf; at k = 10 its M is about 20% lower than
    the Chernoff (MGF) certificate's, and the default calibration now reaches it too (the PLD is cheap here)."""
    from dpspark.noise.bounded_calibrate import _calibrate_mgf

    args = ["calibrate", "bounded-noise", "--k", "10", "--epsilon", "1", "--delta", "1e-6"]
    assert main(args + ["--method", "pld"]) == 0
    pld = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    ch = json.loads(capsys.readouterr().out)
    assert pld["method"] == pld["certificate_path"] == "pld" and ch["method"] == "chernoff"
    assert Fraction(pld["certified_delta"]) <= Fraction(1, 10**6) and Fraction(ch["certified_delta"]) <= Fraction(1, 10**6)
    mgf_M = _calibrate_mgf(10, Fraction(1), Fraction(1, 10**6), 1, "p2", 2)[0]
    assert pld["M"] < mgf_M * Fraction(9, 10)
    assert ch["certificate_path"] == "pld" and ch["M"] <= pld["M"] and ch["R_over_scale"] <= pld["R_over_scale"]


@pytest.mark.slow
def test_cli_sensitivity_on_a_grid_reports_answer_units(capsys: pytest.CaptureFixture[str]) -> None:
    """With Delta = 100 (grid 7) R_over_scale is grid * M over Delta * sqrt(k ln(1/delta))/eps: about the Delta = 1 value."""
    args = ["calibrate", "bounded-noise", "--k", "50", "--epsilon", "1", "--delta", "1e-8"]
    assert main(args) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(args + ["--sensitivity", "100"]) == 0
    big = json.loads(capsys.readouterr().out)
    assert big["grid"] == 7 and one["grid"] == 1
    assert big["R"] == 7 * (big["M"] - 1) + 3
    assert 1.0 <= big["R_over_scale"] / one["R_over_scale"] <= 1.1  # 7 * ceil(100/7) = 105: at most 5% + rounding
    assert big["bounded95_over_scale"] < big["R_over_scale"]


def test_a_long_certified_delta_is_stated_as_a_short_upper_bound() -> None:
    """delta = 1e-300: the certificate's parts exceed what a reader re-derives from (1024 bits); the stated
    value is a short rational between the certificate and the target (still an upper bound on the true delta)."""
    from dpspark.noise.bounded_calibrate import STATED_BITS, readable_upper

    target = Fraction(1, 10**300)
    long = target * Fraction(3**700 - 1, 3**700)  # just below the target, ~1100-bit parts
    stated = readable_upper(long, target)
    assert long <= stated <= target
    assert max(stated.numerator.bit_length(), stated.denominator.bit_length()) <= STATED_BITS
    short = Fraction(1, 10**6)
    assert readable_upper(short, Fraction(1, 10**5)) == short  # short certificates stay exact
    cal = calibrate(1, "1", "1e-300")
    assert max(cal.certified_delta.numerator.bit_length(), cal.certified_delta.denominator.bit_length()) <= 1024
    assert cal.certified_delta <= Fraction(1, 10**300)
