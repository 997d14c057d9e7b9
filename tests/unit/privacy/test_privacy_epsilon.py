"""LogEpsilon: exact arithmetic, certified comparisons and bounds checked against mpmath at 80 digits."""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpspark.errors import DPSparkError
from dpspark.privacy import LogEpsilon, PrivacyError
from dpspark.privacy import certified

mpmath.mp.dps = 80


@pytest.fixture(autouse=True)
def _eighty_digits():  # type: ignore[no-untyped-def]
    """mpmath's precision is global: test_privacy_conversions sets 60 digits at import, which made this file's
    1e-70 checks fail whenever both were collected together (an order-dependent failure on main)."""
    with mpmath.workdps(80):
        yield


def ref(e: LogEpsilon) -> mpmath.mpf:
    """ln(exp) + extra at 80 significant digits (an independent high-precision reference)."""
    return mpmath.log(mpmath.mpf(e.exp.numerator) / e.exp.denominator) + mpmath.mpf(e.extra.numerator) / e.extra.denominator


def mp(x: F) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


ratios = st.fractions(min_value=1, max_value=50, max_denominator=10**6)
extras = st.fractions(min_value=0, max_value=5, max_denominator=2**40)
epsilons = st.builds(LogEpsilon, ratios, extras)


@settings(max_examples=35, deadline=None)
@given(epsilons, epsilons, epsilons, st.integers(0, 6))
def test_exact_arithmetic_laws(a: LogEpsilon, b: LogEpsilon, c: LogEpsilon, k: int) -> None:
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)
    assert k * (a + b) == k * a + k * b
    assert (a + b) - b == a
    assert 0 * a == LogEpsilon.zero()
    assert abs(ref(a + b) - (ref(a) + ref(b))) < mpmath.mpf(10) ** -70


@settings(max_examples=35, deadline=None)
@given(epsilons, st.fractions(min_value=0, max_value=10, max_denominator=10**9))
def test_certified_comparison_agrees_with_reference(a: LogEpsilon, x: F) -> None:
    assert a.le(x) == (ref(a) <= mp(x))
    assert a.lt(x) == (ref(a) < mp(x))


@settings(max_examples=35, deadline=None)
@given(epsilons, st.sampled_from([16, 64, 200]))
def test_bounds_bracket_reference(a: LogEpsilon, bits: int) -> None:
    lo, hi = a.bounds(bits)
    r = ref(a)
    assert mp(lo) <= r <= mp(hi)
    assert hi - lo <= F(4, 2**bits)
    u, l = a.exp_upper(bits), a.exp_lower(bits)
    e_ref = mp(a.exp) * mpmath.exp(mp(a.extra))
    assert mp(l) <= e_ref <= mp(u)
    assert (u - l) / u <= F(1, 2 ** (bits - 4))


def test_equality_is_mathematical_and_rational_case_exact() -> None:
    a = LogEpsilon(F(3, 2), F(1, 7))
    assert a == LogEpsilon("3/2", "1/7") and hash(a) == hash(LogEpsilon(F(3, 2), F(1, 7)))
    assert LogEpsilon.of("1/2") == LogEpsilon(1, "1/2") and LogEpsilon.of("1/2").as_fraction() == F(1, 2)
    assert LogEpsilon.of("1/2").bounds() == (F(1, 2), F(1, 2))
    # ln 3 vs its rational neighbours 1.0986122886 < ln 3 < 1.0986122887
    ln3 = LogEpsilon(3)
    assert ln3.le("1.0986122887") and not ln3.le("1.0986122886")
    assert ln3.compare(LogEpsilon(3)) == 0 and ln3.compare(LogEpsilon(9) - LogEpsilon(3)) == 0
    with pytest.raises(PrivacyError):
        ln3.as_fraction()


def test_differences_may_leave_the_usual_form_but_never_go_negative() -> None:
    budget = LogEpsilon.of(2)
    left = budget - LogEpsilon(F(3, 2), F(1, 2**126))  # 2 - ln(3/2) - 2^-126
    assert left.exp == F(2, 3) and left.extra == 2 - F(1, 2**126)
    assert abs(ref(left) - (2 - mpmath.log(1.5))) < mpmath.mpf(10) ** -30
    with pytest.raises(PrivacyError, match=">= 0"):
        LogEpsilon(1) - "1/1000"
    with pytest.raises(PrivacyError):
        LogEpsilon(F(1, 2), F(1, 2))  # ln(1/2) + 1/2 < 0
    with pytest.raises(PrivacyError):
        LogEpsilon(0, 1)
    assert isinstance(PrivacyError("x"), DPSparkError) and isinstance(PrivacyError("x"), ValueError)


def test_exp_upper_matches_the_manifest_form_for_tiny_bias() -> None:
    r, b = F(7, 5), F(3, 2**126)
    assert LogEpsilon(r, b).exp_upper() == r / (1 - b)  # what release manifests record today
    assert LogEpsilon(r, 0).exp_upper() == r


@pytest.mark.parametrize("bad", [0.5, np.float64(0.5)])
def test_floats_are_refused_with_a_reason(bad: object) -> None:
    with pytest.raises(TypeError, match="float"):
        LogEpsilon(bad)
    with pytest.raises(TypeError, match="float"):
        LogEpsilon.of(bad)
    with pytest.raises(TypeError, match="float"):
        LogEpsilon(2, bad)
    with pytest.raises(TypeError):
        LogEpsilon(2) * 2.0  # type: ignore[operator]
    with pytest.raises(TypeError):
        LogEpsilon(2) * -1


def test_description_round_trip_with_huge_parts() -> None:
    a = LogEpsilon(F(3**300, 2**400), F(5, 2**700))
    d = a.describe()
    assert isinstance(d["exp"]["num"], str) and d["exp"]["num"].startswith("0x")
    assert LogEpsilon.from_description(d) == a
    small = LogEpsilon(F(3, 2), F(1, 10))
    assert small.describe()["exp"] == {"num": 3, "den": 2}
    assert LogEpsilon.from_description(small.describe()) == small


def test_certified_helpers_round_outward() -> None:
    x = F(1, 3)
    assert certified.round_up(x, 4) == F(6, 16) and certified.round_down(x, 4) == F(5, 16)
    assert certified.round_up(-x, 4) == F(-5, 16) and certified.round_up(F(1, 4), 4) == F(1, 4)
    lo, hi = certified.sqrt_bounds(F(2), 100)
    assert lo * lo <= 2 <= hi * hi
    with pytest.raises(PrivacyError):
        certified.ln_bounds(F(0))


def test_tiny_extras_keep_the_requested_precision() -> None:
    """Hypothesis found LogEpsilon(1/(2^32 + 1)) at 200 bits: the 1 +- f forms are used only when tight enough."""
    a = LogEpsilon(1, F(1, 2**32 + 1))
    for bits in (16, 64, 200):
        u, l = a.exp_upper(bits), a.exp_lower(bits)
        assert mp(l) <= mpmath.exp(mp(a.extra)) <= mp(u)
        assert (u - l) / u <= F(1, 2 ** (bits - 4))
    b = LogEpsilon(F(21, 8), F(4, 2**128))  # a release's rng bias: the manifest form stays exp / (1 - f)
    assert b.exp_upper() == F(21, 8) / (1 - F(4, 2**128))


# --- issue 35 §1: flint off the read path (an exact ln bracket; exp_upper memoised on disk) ------------------


@settings(max_examples=60, deadline=None)
@given(st.fractions(min_value=F(1, 10**6), max_value=10**6, max_denominator=10**6), st.integers(1, 20))
def test_the_exact_ln_bracket_encloses_ln(x: F, terms: int) -> None:
    """lo <= ln x <= hi for any number of terms; tight near 1 (the statements' exps). The reference runs at 320
    digits: with x = (d + 1)/d, d <= 10^6, a bound can sit 10^-258 from ln x, past 80 digits."""
    lo, hi = certified.ln_series_bracket(x, terms)
    with mpmath.workdps(320):
        assert mp(lo) <= mpmath.log(mp(x)) <= mp(hi)
    if F(1, 2) <= x <= 2:
        lo, hi = certified.ln_series_bracket(x)  # the default terms
        assert hi - lo < F(1, 10**12)


def test_a_sign_the_bracket_decides_imports_no_flint_and_agrees_with_arb() -> None:
    """ln(13/8) + 2^-126 against 1/2 (a sampler's statement and its budget): decided exactly, as arb decides it."""
    import subprocess
    import sys

    code = ("import sys\nfrom fractions import Fraction as F\nfrom dpspark.privacy import LogEpsilon\n"
            "e = LogEpsilon(F(13, 8), F(1, 2**126))\n"
            "print(e.le('1/2'), e.lt('1/2'), e.compare('0.48'), 'flint' in sys.modules)\n")
    import os
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env).stdout.split()
    assert out == ["True", "True", "1", "False"]
    f = F(1, 2**126) - F(1, 2)
    assert certified.decide_sign(lambda q: q(F(13, 8)).log() + q(f)) == -1  # arb agrees


def test_exp_upper_is_memoised_on_disk_with_the_computed_value(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import json

    from dpspark import disk_memo
    from dpspark.privacy import epsilon as E

    monkeypatch.setenv("DPSPARK_CACHE_DIR", str(tmp_path))
    e = LogEpsilon(F(3, 2), F(7, 10))
    computed = F(3, 2) * certified.upper(lambda q: q(F(7, 10)).exp(), 64 + E._exp_scale(F(7, 10)))
    assert e.exp_upper() == computed
    [entry] = list((tmp_path / "calibrations").glob("exp_upper-*.json"))

    def no_flint(*args: object, **kwargs: object) -> None:
        raise AssertionError("computed again")

    monkeypatch.setattr(certified, "upper", no_flint)
    assert LogEpsilon(F(3, 2), F(7, 10)).exp_upper() == computed  # from the disk, the same exact value
    doc = json.loads(entry.read_text())  # a resealed value below 1 + f, e^f's elementary lower bound: refused
    doc["value"] = "1"
    doc["check"] = disk_memo._check(doc["key"], doc["value"])
    entry.write_text(json.dumps(doc))
    with pytest.warns(disk_memo.CorruptCacheEntry, match=str(entry)), pytest.raises(AssertionError, match="computed again"):
        LogEpsilon(F(3, 2), F(7, 10)).exp_upper()


@pytest.mark.parametrize("x", [F(3 * 2**4096 + 1, 2 * 2**4096 + 1), F(2**300 + 7, 2**299 + 3), F(1, 3),
                               F(10**40 + 1, 10**40), F(7, 2**130), F(13, 8) ** 90])
def test_a_long_argument_is_rounded_outward_and_still_enclosed(x: F) -> None:
    """A composed epsilon's exp has hundreds of bits: rounded onto the 2^-120 grid first, fast and still exact."""
    import time

    t0 = time.process_time()
    lo, hi = certified.ln_series_bracket(x)
    assert time.process_time() - t0 < 0.5  # report: was seconds at 4096 bits unrounded
    with mpmath.workdps(320):
        assert mp(lo) <= mpmath.log(mp(x)) <= mp(hi)
    if F(1, 2) <= x <= 2:
        assert hi - lo < F(1, 10**12)
