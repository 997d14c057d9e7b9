"""PrivacyStatement and AccuracyStatement: exact round trips, today's statements expressed exactly, conversions."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
import os
import subprocess
import sys
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpspark.noise.geosample import GeoSample
from dpspark.mechanisms.histogram.basic import basic_accuracy, basic_privacy
from dpspark.privacy import (
    AccuracyClaim,
    AccuracyStatement,
    AddRemove,
    ApproxDP,
    DescriptionError,
    LogEpsilon,
    PrivacyError,
    PrivacyStatement,
    PureDP,
    RelationError,
    Substitute,
    Unbounded,
    ZCDP,
    compose_statements,
    parallel_statements,
    truncated_statement,
)


@dataclass(frozen=True)
class OldPrivacy:
    """The pre-unification histogram statement (exp_eps, bias_epsilon, delta), kept here as the reference."""

    exp_eps: F
    bias_epsilon: F
    delta: F
    theorem: str
    notes: str = ""

    def epsilon_bound(self) -> float:
        return math.log(self.exp_eps.numerator) - math.log(self.exp_eps.denominator) + float(self.bias_epsilon)  # report


def roundtrip_json(obj: dict) -> dict:
    return json.loads(json.dumps(obj))


def from_old(old: OldPrivacy, n: int) -> PrivacyStatement:
    return PrivacyStatement.from_exp_eps(old.exp_eps, old.bias_epsilon, old.delta, old.theorem, AddRemove(n), old.notes)


@pytest.mark.parametrize(
    "old",
    [
        OldPrivacy(basic_privacy(GeoSample(n=20, exp_eps=F(2)), 128).exp_eps,
                   basic_privacy(GeoSample(n=20, exp_eps=F(2)), 128).bias_epsilon, F(0), "basic"),
        OldPrivacy(exp_eps=F(7, 4), bias_epsilon=F(8, 2**128), delta=F(1, 2**3000), theorem="stability"),
        OldPrivacy(exp_eps=F(3**200, 2**300), bias_epsilon=F(0), delta=F(1, 10**9), theorem="pure sparse"),
    ],
)
def test_todays_histogram_statements_are_expressed_exactly(old: OldPrivacy) -> None:
    n = 50
    new = from_old(old, n)
    assert (new.exp_eps, new.bias_epsilon, new.delta, new.pure) == (old.exp_eps, old.bias_epsilon, old.delta, old.delta == 0)
    assert isinstance(new.measure, PureDP if old.delta == 0 else ApproxDP)
    assert new.epsilon_float() == pytest.approx(old.epsilon_bound(), rel=1e-12)  # report
    assert PrivacyStatement.from_description(roundtrip_json(new.describe())) == new
    # the release manifest's replacement rule: exp^2, 2 bias, (1 + exp / (1 - bias)) delta
    rep = new.under(Substitute(n))
    assert rep.exp_eps == old.exp_eps**2 and rep.bias_epsilon == 2 * old.bias_epsilon
    assert rep.delta == (1 + old.exp_eps / (1 - old.bias_epsilon)) * old.delta
    assert PrivacyStatement.from_description(roundtrip_json(rep.describe())) == rep


def test_todays_accuracy_statements_are_expressed_exactly() -> None:
    old = basic_accuracy(GeoSample(n=20, exp_eps=F(2)), 100, F(1, 20))
    new = AccuracyStatement.histogram(
        old.a_per_query, old.beta_per_query, old.per_query_above, old.a_simultaneous, old.beta_simultaneous, old.notes
    )
    assert (new.a_per_query, new.beta_per_query, new.per_query_above, new.a_simultaneous, new.beta_simultaneous, new.notes) == (
        old.a_per_query, old.beta_per_query, old.per_query_above, old.a_simultaneous, old.beta_simultaneous, old.notes
    )
    thresholded = AccuracyStatement.histogram(7, "1/20", 12, 9, "1/20", "stability")
    assert thresholded.per_query_above == 12 and thresholded.find("per_query").count_above == 12
    for st in (new, thresholded):
        assert AccuracyStatement.from_description(roundtrip_json(st.describe())) == st


def test_accuracy_claims_cover_bounded_noise_tv_and_conditions() -> None:
    st = AccuracyStatement(
        [
            AccuracyClaim.deterministic(17, condition="assuming exactly n units"),
            AccuracyClaim.tv_distance("1/10", min_units=4000, condition="data i.i.d. from P"),
            AccuracyClaim("l2_error", "3/2", "1e-6", "output", min_units=10**40),
        ],
        notes="bounded noise",
    )
    assert st.claims[0].deterministic_claim and "probability 1" in st.claims[0].text()
    assert "4000" in st.claims[1].text() and st.claims[1].scope == "output"
    back = AccuracyStatement.from_description(roundtrip_json(st.describe()))
    assert back == st
    with pytest.raises(PrivacyError):
        st.a_per_query
    for bad in [dict(bound="-1"), dict(beta="3/2"), dict(scope="all"), dict(count_above=-1)]:
        kw = dict(quantity="abs_error", bound=1, beta=0, scope="per_query") | bad
        with pytest.raises(PrivacyError):
            AccuracyClaim(**kw)
    with pytest.raises(TypeError, match="float"):
        AccuracyClaim("abs_error", 1.5, 0, "per_query")
    with pytest.raises(DescriptionError):
        AccuracyStatement.from_description({"claims": [{"quantity": "abs_error"}], "notes": ""})


def test_zcdp_statement_conversions_and_round_trip() -> None:
    z = PrivacyStatement(ZCDP("1/8"), AddRemove(100), "discrete Gaussian, sigma^2 = 4 (CKS20 Thm 4)")
    assert z.rho == F(1, 8) and z.epsilon is None
    with pytest.raises(PrivacyError):
        z.delta
    assert PrivacyStatement.from_description(roundtrip_json(z.describe())) == z
    assert z.under(Substitute(100)).measure == ZCDP("1/2")
    cks = z.to_approx_dp("1e-9")
    bs = z.to_approx_dp("1e-9", method="bun_steinke")
    assert cks.measure.epsilon < bs.measure.epsilon and "CKS20" in cks.theorem
    with pytest.raises(PrivacyError):
        z.to_approx_dp("1e-9", method="magic")
    pure = PrivacyStatement(PureDP("1"), AddRemove(100), "geometric")
    assert pure.to_zcdp().measure == ZCDP("1/2")
    with pytest.raises(PrivacyError):
        PrivacyStatement(ApproxDP("1", "1e-9"), AddRemove(5), "x").to_zcdp()


def test_relation_conversions_of_statements() -> None:
    s = PrivacyStatement.from_exp_eps(F(3, 2), F(1, 2**126), 0, "geo", AddRemove(10))
    assert s.under(AddRemove(10)) is s
    assert s.under(AddRemove(4)).measure == s.measure
    with pytest.raises(RelationError):
        s.under(Unbounded())
    with pytest.raises(RelationError):
        s.under(Substitute(11))
    t = truncated_statement(s)
    assert t.relation == Unbounded() and t.measure == PureDP(2 * LogEpsilon(F(3, 2), F(1, 2**126)))
    with pytest.raises(PrivacyError):
        truncated_statement(t)


def test_statement_composition() -> None:
    a = PrivacyStatement(PureDP("1/2"), AddRemove(10), "A")
    b = PrivacyStatement(ApproxDP("1/4", "1e-9"), AddRemove(10), "B")
    c = PrivacyStatement(PureDP("1/2"), Unbounded(), "C")  # implies AddRemove(10) unchanged
    seq = compose_statements([a, b, c])
    assert seq.measure == ApproxDP("5/4", "1e-9") and seq.relation == AddRemove(10)
    par = parallel_statements([a, b, c])
    assert par.measure == ApproxDP("1/2", "1e-9")
    sub = compose_statements([a, b], relation=Substitute(10))
    assert sub.measure.epsilon == LogEpsilon.of("3/2")


def test_description_errors() -> None:
    good = PrivacyStatement(PureDP("1"), AddRemove(10), "t").describe()
    for broken in [
        {**good, "measure": {"measure": "renyi"}},
        {**good, "relation": {"kind": "swap"}},
        {**good, "relation": {"kind": "add_remove", "n": 0}},
        {**good, "measure": {"measure": "approx", "epsilon": good["measure"]["epsilon"], "delta": {"num": 3, "den": 2}}},
        {**good, "measure": {"measure": "zcdp", "rho": {"num": 1, "den": 0}}},
        {k: v for k, v in good.items() if k != "theorem"},
        {**good, "theorem": 5},
        [],
    ]:
        with pytest.raises(DescriptionError):
            PrivacyStatement.from_description(broken)


@pytest.mark.parametrize("bad", [0.5, 1e-9])
def test_float_amounts_are_refused(bad: float) -> None:
    with pytest.raises(TypeError, match="float"):
        PureDP(bad)
    with pytest.raises(TypeError, match="float"):
        ApproxDP("1", bad)
    with pytest.raises(TypeError, match="float"):
        ZCDP(bad)
    with pytest.raises(TypeError, match="float"):
        PrivacyStatement.from_exp_eps(F(3, 2), 0, bad, "t", AddRemove(3))
    with pytest.raises(TypeError, match="float"):
        PrivacyStatement(ZCDP("1/2"), AddRemove(3), "t").to_approx_dp(bad)


measures = st.one_of(
    st.builds(lambda r, f: PureDP(LogEpsilon(r, f)), st.fractions(1, 10**6, max_denominator=2**70), st.fractions(0, 10, max_denominator=2**140)),
    st.builds(lambda e, d: ApproxDP(e, d), st.fractions(0, 10, max_denominator=10**9), st.fractions(0, 1, max_denominator=2**200)),
    st.builds(ZCDP, st.fractions(0, 10**3, max_denominator=2**64)),
)
relations = st.one_of(st.builds(AddRemove, st.integers(1, 2**80)), st.builds(Substitute, st.integers(1, 99)), st.just(Unbounded()))


@settings(max_examples=30, deadline=None)
@given(measures, relations, st.text(max_size=20), st.text(max_size=20))
def test_statement_round_trip_through_json(m, rel, theorem: str, notes: str) -> None:
    s = PrivacyStatement(m, rel, theorem, notes)
    assert PrivacyStatement.from_description(roundtrip_json(s.describe())) == s


def test_reading_and_describing_statements_does_not_load_flint() -> None:
    code = (
        "import sys; from fractions import Fraction as F; from dpspark.privacy import *\n"
        "s = PrivacyStatement.from_exp_eps(F(3, 2), F(1, 2**126), F(1, 10**9), 't', AddRemove(5))\n"
        "PrivacyStatement.from_description(s.describe()); s.under(Substitute(5))\n"
        "AccuracyStatement.from_description(AccuracyStatement.histogram(3, '1/20', -1, 5, '1/20').describe())\n"
        "assert 'flint' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
