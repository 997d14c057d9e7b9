"""The ``answers`` mechanisms without an engine: query parsing, the k-answer noise law, the bounds, refusals."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Callable, Sequence

import pytest

from dpspark.api.config import ConfigError, ReleaseSpec
from dpspark.mechanisms.answers.mechanism import assemble, release_scalars, round_half_up
from dpspark.mechanisms.answers.queries import Scalar
from dpspark.noise.bounded import BoundedNoise
from dpspark.rng import SeededRandom
from dpspark.mechanisms.registry import construct

QUERIES = [
    {"name": "rows", "kind": "count"},
    {"name": "total", "kind": "sum", "column": "x", "lo": "-3", "hi": "5", "scale_bits": 0},
    {"name": "half", "kind": "sum", "column": "x", "lo": "0", "hi": "2", "scale_bits": 1},
    {"name": "avg", "kind": "mean", "column": "x", "lo": "0", "hi": "10", "mean": "noisy_count"},
    {"name": "avg_n", "kind": "mean", "column": "x", "lo": "-1/2", "hi": "10", "n": 1000},
]


def spec(mechanism: str = "bounded_noise", queries=None, **privacy) -> ReleaseSpec:
    priv = {"mechanism": mechanism, "epsilon": "1", "delta": "1e-6", "max_units": 1000, **privacy}
    return ReleaseSpec.from_dict({"privacy": priv, "queries": QUERIES if queries is None else queries,
                                  "output": {"path": "/tmp/dpspark-answers-unused"}}, input_given=True)


class Scripted:
    """A RandomSource whose uniform(n) returns scripted values (n checked)."""

    name, lam = "scripted", 128

    def __init__(self, values: Sequence[int], n: int) -> None:
        self.values, self.n, self.i = list(values), n, 0

    def uniform(self, n: int) -> int:
        assert n == self.n
        v = self.values[self.i % len(self.values)]
        self.i += 1
        return v

    def bits(self, k: int) -> int:  # pragma: no cover - not used by BoundedNoise
        raise AssertionError("bits() not expected")


# ----------------------------------------------------------------------------- parsing
def test_scalars_and_sensitivities() -> None:
    mech = construct(spec())
    got = [(s.label, s.lo, s.hi, s.delta) for s in mech.scalars]
    assert got == [("rows", 0, 1, 1), ("total", -3, 5, 5), ("half", 0, 4, 4), ("avg#sum", 0, 2560, 2560),
                   ("avg#count", 0, 1, 1), ("avg_n#sum", -128, 2560, 2560)]
    assert mech.k == 6  # the noisy-count mean is two answers


def test_float_bound_is_a_type_error() -> None:
    bad = [{"name": "s", "kind": "sum", "column": "x", "lo": 0, "hi": 1.5}]
    with pytest.raises(TypeError, match="float"):
        spec(queries=bad)


@pytest.mark.parametrize("query, words", [
    ({"name": "q", "kind": "median", "column": "x"}, "kind must be one of"),
    ({"name": "q", "kind": "sum", "column": "x", "lo": "0"}, "lo and hi"),
    ({"name": "q", "kind": "sum", "column": "x", "lo": "2", "hi": "1"}, "lo must be <= hi"),
    ({"name": "q", "kind": "sum", "column": "x", "lo": "0", "hi": "0"}, "sums nothing"),
    ({"name": "q", "kind": "mean", "column": "x", "lo": "0", "hi": "1", "mean": "public_n"}, "public number of units n"),
    ({"name": "q", "kind": "count", "column": "x"}, "takes no 'column'"),
    ({"name": "q", "kind": "count", "filter": ""}, "filter must be"),
    ({"name": "q", "kind": "count", "colour": "x"}, "unknown field"),
])
def test_bad_queries_are_refused(query, words) -> None:
    with pytest.raises(ConfigError, match=words):
        spec(queries=[query])


def test_duplicate_names_and_keys_sections_are_refused() -> None:
    with pytest.raises(ConfigError, match="unique"):
        spec(queries=[{"name": "a", "kind": "count"}, {"name": "a", "kind": "count"}])
    raw = {"privacy": {"mechanism": "gaussian", "epsilon": "1", "delta": "1e-6", "max_units": 10},
           "queries": [{"name": "a", "kind": "count"}], "keys": {"columns": ["x"]}, "output": {"path": "/tmp/x"}}
    with pytest.raises(ConfigError, match=r"\[keys\] does not apply"):
        ReleaseSpec.from_dict(raw, input_given=True)


def test_bad_family_is_refused() -> None:
    with pytest.raises(ConfigError, match="family"):
        spec(family="p3")


# ----------------------------------------------------------------------------- the calibrated law
def test_privacy_statement_is_the_calibration() -> None:
    from dpspark.noise.bounded_calibrate import calibrate
    from dpspark.privacy.measures import ApproxDP

    mech = construct(spec())
    cal = calibrate(6, "1", "1e-6", sensitivity=1, family="p2", method="chernoff")
    st = mech.statement()
    assert st.measure == ApproxDP(cal.epsilon, cal.certified_delta)
    assert cal.certified_delta <= Fraction(1, 10**6)
    assert mech.law.abs_bound == cal.M - 1 and mech.law.bound95 == cal.bound95
    assert st.relation.n == 1000


def law_check(release: Callable[[Sequence[int], Sequence[Scalar], Callable[[], int]], list[int]],
              scalars: Sequence[Scalar], noise: BoundedNoise, totals: Sequence[int]) -> None:
    """Enumerate every u: each coordinate's error is Delta_j * Z with Z ~ noise exactly, and a neighbour's
    output law is the same law moved by at most one grid step (so the unit-sensitivity calibration applies)."""
    pmf = noise.pmf()
    for j, s in enumerate(scalars):
        for x in (totals[j], totals[j] + s.delta, totals[j] - 1):
            law: Counter = Counter()
            for u in range(1, noise.d + 1):
                # coordinate j draws u; the others draw the middle of the range
                draws = iter([u if i == j else noise.d // 2 for i in range(len(scalars))])
                xs = list(totals)
                xs[j] = x
                y = release(xs, scalars, lambda: noise.sample(next(draws)))[j]
                law[y] += 1
            base = s.delta * round_half_up(x, s.delta)
            want = Counter({base + s.delta * z: int(p * noise.d) for z, p in pmf.items() if p})
            assert law == want, f"scalar {s.label}: the output law is not Delta * (round(x/Delta) + Z)"
            centre = round_half_up(totals[j], s.delta)
            assert abs(round_half_up(x, s.delta) - centre) <= 1  # a neighbour moves the grid point by <= 1


def _scalars() -> list[Scalar]:
    return construct(spec()).scalars


TOTALS = [37, -11, 9, 12345, 41, -1000]


def test_k_answer_noise_is_the_calibrated_law() -> None:
    noise = BoundedNoise(3, "p2", bits=8)  # tiny M: every u enumerated (d = 512)
    law_check(release_scalars, _scalars(), noise, TOTALS)


def test_law_check_catches_wrong_delta_scaling() -> None:
    noise = BoundedNoise(3, "p2", bits=8)

    def unscaled(totals, scalars, draw):  # mutant: noise not scaled by Delta_j
        return [s.delta * round_half_up(x, s.delta) + draw() for x, s in zip(totals, scalars)]

    def unrounded(totals, scalars, draw):  # mutant: Delta_j * Z added to the raw total (no grid)
        return [x + s.delta * draw() for x, s in zip(totals, scalars)]

    def shared(totals, scalars, draw):  # mutant: one draw reused for every coordinate
        z = draw()
        return [s.delta * (round_half_up(x, s.delta) + z) for x, s in zip(totals, scalars)]

    for mutant in (unscaled, unrounded, shared):
        with pytest.raises(AssertionError):
            law_check(mutant, _scalars(), noise, TOTALS)


def test_mechanism_path_draws_k_values_of_its_table() -> None:
    mech = construct(spec())
    noise = mech.noise()
    assert noise.M == mech.cal.M and noise.bits == mech.cal.bits
    us = [1, noise.d, 7, noise.d // 3, 2, noise.d - 1]
    answers = mech.answer_totals(TOTALS, Scripted(us, noise.d))
    ys = release_scalars(TOTALS, mech.scalars, iter([noise.sample(u) for u in us]).__next__)
    assert answers == assemble(mech.queries, ys, mech.law)


# ----------------------------------------------------------------------------- bounds on every answer
def _check_within(mech, totals, answers) -> None:
    i = 0
    for q, a in zip(mech.queries, answers):
        sc = q.scalars()
        xs = totals[i:i + len(sc)]
        i += len(sc)
        if q.kind == "count":
            assert abs(a["value"] - xs[0]) <= a["R"]
        elif q.kind == "sum":
            assert abs(a["value"] - Fraction(xs[0], q.scale)) <= a["R"]
        elif q.mean == "public_n":
            assert abs(a["value"] - Fraction(xs[0], q.scale * q.n)) <= a["R"]
        else:
            assert a["R"] is None  # never "within R"
            if a["value"] is not None and xs[1] >= 1:
                assert abs(a["value"] - Fraction(xs[0], q.scale * xs[1])) <= a["conditional_bound"]


def test_every_answer_within_R() -> None:
    mech = construct(spec())
    noise = mech.noise()
    rng = SeededRandom(b"answers-within-R")
    # extreme draws first (|Z| = M - 1 at u = 1 and u = d), then random ones
    for us in ([1] * 6, [noise.d] * 6):
        totals = [900, -2000, 3000, 800 * 256, 300, 500 * 256]
        _check_within(mech, totals, mech.answer_totals(totals, Scripted(us, noise.d)))
    for _ in range(300):
        c = rng.uniform(1000)
        totals = [rng.uniform(1000), rng.uniform(8000) - 3000, rng.uniform(4000) - 1,
                  rng.uniform(c) * 10 * 256 // c * c // 10, c, rng.uniform(10000 * 256)]
        _check_within(mech, totals, mech.answer_totals(totals, rng))


def test_gaussian_plan_and_statement_fit_the_budget() -> None:
    mech = construct(spec("gaussian"))
    approx = mech.certified_approx()
    assert approx.epsilon <= 1 and approx.delta == Fraction(1, 10**6)
    assert mech.rho == 6 * mech.dg.zcdp_rho(1) <= mech.rho_budget
    assert mech.law.abs_bound is None and mech.law.bound95 > 0
    rng = SeededRandom(b"gauss")
    answers = mech.answer_totals(TOTALS, rng)
    assert all(a["R"] is None for a in answers)


def test_gaussian_t95_is_the_exact_union_bound() -> None:
    mech = construct(spec("gaussian"))
    dg, t = mech.dg, mech.law.bound95

    def tail(t: int) -> Fraction:
        return Fraction(dg.d - (dg.scaled_cdf(t) - dg.scaled_cdf(-t - 1)), dg.d)

    assert 6 * tail(t) <= Fraction(1, 20) < 6 * tail(t - 1)


def test_gaussian_path_is_delta_times_the_wrapped_sample() -> None:
    """Each Gaussian answer is Delta_j * ((round(x_j / Delta_j) + Z_j) mod m around 0), Z_j = sample(u_j)."""
    mech = construct(spec("gaussian"))
    dg = mech.dg

    class Bits:
        name, lam = "scripted-bits", 128

        def __init__(self, us):
            self.us = list(us)

        def bits(self, k):
            assert k == dg.bits
            return self.us.pop(0) - 1

        def uniform(self, n):  # pragma: no cover
            raise AssertionError

    us = [1, dg.d, dg.d // 2, 12345, dg.d // 3, dg.d - 7]
    got = mech.release(TOTALS, mech.scalars, Bits(us))
    want = [s.delta * int(dg.wrap(round_half_up(x, s.delta) + dg.sample(u), 0))
            for x, s, u in zip(TOTALS, mech.scalars, us)]
    assert got == want
    assert all(y % s.delta == 0 for y, s in zip(got, mech.scalars))  # every answer on its own Delta_j grid
