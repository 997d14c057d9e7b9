"""Budget: exact spending by composition, refusal without change, exact remainder, relation conversion."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from dpspark.errors import DPSparkError
from dpspark.privacy import (
    AddRemove,
    ApproxDP,
    Budget,
    BudgetExceeded,
    IncompatibleMeasures,
    LogEpsilon,
    PrivacyError,
    PrivacyStatement,
    PureDP,
    RelationError,
    Substitute,
    ZCDP,
)

REL = AddRemove(1000)


def st(measure, relation=REL) -> PrivacyStatement:
    return PrivacyStatement(measure, relation, "test")


def test_approx_budget_spends_exactly_and_refuses_without_change() -> None:
    b = Budget({"epsilon": "2", "delta": "1e-8"}, REL)
    assert b.remaining == ApproxDP("2", "1e-8") and b.spent is None
    geo = PrivacyStatement.from_exp_eps(F(3, 2), F(1, 2**126), 0, "geo", REL)
    b.spend(geo)
    b.spend(st(ApproxDP("1", "1e-9")))
    assert b.spent == ApproxDP(LogEpsilon(F(3, 2), 1 + F(1, 2**126)), "1e-9")
    left = b.remaining  # 2 - 1 - ln(3/2) - 2^-126 = ln(2/3) + 1 - 2^-126, exactly
    assert left == ApproxDP(LogEpsilon(F(2, 3), 1 - F(1, 2**126)), F(9, 10**9))
    big = st(PureDP("0.6"))  # 0.6 > 1 - ln(1.5) = 0.5945...
    assert not b.can_spend(big)
    with pytest.raises(BudgetExceeded) as err:
        b.spend(big)
    assert isinstance(err.value, DPSparkError) and isinstance(err.value, ValueError)
    assert b.remaining == left and len(b.history) == 2
    b.spend(st(PureDP("0.59")))
    with pytest.raises(BudgetExceeded):
        b.spend(st(ApproxDP("0", "1e-8")))  # delta over
    assert b.describe()["remaining"]["measure"] == "approx"


def test_exact_boundary_is_allowed() -> None:
    b = Budget({"epsilon": "1"}, REL)
    b.spend(st(PureDP("1/2")))
    b.spend(st(PureDP("1/2")))
    assert b.remaining == PureDP(0)
    with pytest.raises(BudgetExceeded):
        b.spend(st(PureDP(F(1, 2**200))))
    ln = Budget(PureDP(LogEpsilon(3)), REL)
    ln.spend(st(PureDP(LogEpsilon(3))))  # ln 3 <= ln 3 exactly
    assert ln.remaining == PureDP(0)


def test_relations_are_converted_on_spend() -> None:
    sub = Budget({"epsilon": "1"}, Substitute(1000))
    sub.spend(st(PureDP("1/4")))  # add/remove 1/4 costs 1/2 under substitution
    assert sub.spent == PureDP("1/2")
    ar = Budget({"epsilon": "1"}, REL)
    with pytest.raises(RelationError):
        ar.spend(st(PureDP("1/4"), Substitute(1000)))


def test_zcdp_budget_takes_pure_as_eps_squared_over_two() -> None:
    b = Budget({"rho": "1/2"}, REL)
    b.spend(st(PureDP("1/2")))  # 1/8
    b.spend(st(ZCDP("1/4")))
    assert b.spent == ZCDP("3/8") and b.remaining == ZCDP("1/8")
    with pytest.raises(BudgetExceeded):
        b.spend(st(PureDP("1")))
    with pytest.raises(IncompatibleMeasures):
        b.spend(st(ApproxDP("1/10", "1e-9")))


def test_incompatible_spends_are_explained() -> None:
    with pytest.raises(IncompatibleMeasures, match="to_approx_dp"):
        Budget({"epsilon": "2", "delta": "1e-8"}, REL).spend(st(ZCDP("1/100")))
    with pytest.raises(IncompatibleMeasures):
        Budget({"epsilon": "2"}, REL).spend(st(ApproxDP("1", "1e-9")))
    b = Budget({"epsilon": "2", "delta": "1e-8"}, REL)
    b.spend(st(ZCDP("1/100")).to_approx_dp("1e-9"))
    assert b.spent.delta == F(1, 10**9)


def test_budget_inputs() -> None:
    assert Budget({"epsilon": "1", "delta": "0"}, REL).total == PureDP("1")
    with pytest.raises(TypeError, match="float"):
        Budget({"epsilon": 1.0}, REL)
    with pytest.raises(TypeError, match="float"):
        Budget({"epsilon": "1", "delta": 1e-9}, REL)
    for bad in [{"eps": "1"}, {"epsilon": "1", "rho": "1"}, "1", {"epsilon": "-1"}, {"epsilon": "1", "delta": "2"}]:
        with pytest.raises(PrivacyError):
            Budget(bad, REL)
