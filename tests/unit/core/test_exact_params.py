"""Exact parameter parsing: floats and Decimals are refused, rationals are exact."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from dpspark.exact import clog2, exp_lower_bound, parse_rational


@pytest.mark.parametrize(
    "given, expected",
    [
        ("1/10", Fraction(1, 10)),
        ("0.1", Fraction(1, 10)),
        (" 1e-3 ", Fraction(1, 1000)),
        ("2^-70", Fraction(1, 2**70)),
        ("2**-3", Fraction(1, 8)),
        (3, Fraction(3)),
        (Fraction(2, 7), Fraction(2, 7)),
    ],
)
def test_parse_rational_accepts_exact_forms(given: object, expected: Fraction) -> None:
    assert parse_rational(given, "epsilon") == expected


@pytest.mark.parametrize("bad", [0.1, np.float64(0.1), np.float32(0.5), Decimal("0.1"), Decimal(0.1)])
def test_parse_rational_rejects_inexact_types_with_reason(bad: object) -> None:
    with pytest.raises(TypeError) as err:
        parse_rational(bad, "epsilon")
    assert "epsilon" in str(err.value)
    assert "str" in str(err.value) or "string" in str(err.value)


def test_parse_rational_rejects_bool_and_garbage() -> None:
    with pytest.raises(TypeError, match="beta"):
        parse_rational(True, "beta")
    with pytest.raises(ValueError, match="beta"):
        parse_rational("one tenth", "beta")
    with pytest.raises(ValueError, match="beta"):
        parse_rational("nan", "beta")
    with pytest.raises(TypeError, match="beta"):
        parse_rational([1], "beta")


def test_clog2() -> None:
    assert [clog2(x) for x in (1, 2, 3, 4, 5, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]
    with pytest.raises(ValueError):
        clog2(0)


@pytest.mark.parametrize("r", [Fraction(0), Fraction(1, 20), Fraction(1, 2), Fraction(1), Fraction(7, 2), Fraction(20)])
def test_exp_lower_bound_is_certified_and_tight(r: Fraction) -> None:
    import math

    low = exp_lower_bound(r)
    # Next Taylor term bounds the gap; the partial sum is below e^r by construction.
    assert low <= Fraction(math.exp(r)) * (1 + Fraction(1, 10**12))  # analysis only
    assert low >= Fraction(math.exp(r)) * (1 - Fraction(1, 10**12))
    # certified: the partial sum plus a remainder bound exceeds it; check monotone in precision
    assert exp_lower_bound(r, 200) >= low
