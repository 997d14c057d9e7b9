"""Exact tests of the bounded-bias Bernoulli sampler (RSSS Thm 6.1) and its product over d columns (Thm 6.4)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from dpspark.rng import DEFAULT_LAMBDA, SeededRandom
from dpspark.mechanisms.samplers import bernoulli as B
from dpspark.mechanisms.samplers.categorical import uniform_cdf_count
from tests.support.chisq import chi2_critical

LAM = DEFAULT_LAMBDA


def _p_one(c: int, n: int, clip=B.clipped_numerator) -> Fraction:
    """Implemented Pr[bit = 1]: Pr[uniform(4n) <= 4n p~] under the rng's reduction (exact)."""
    return uniform_cdf_count(4 * n, clip(c, n), LAM)


def _bias_factor(n: int) -> Fraction:
    if not B.column_bias_draws(n):
        return Fraction(1)
    a = Fraction(1, 1 << LAM)
    return (1 + a) / (1 - a)


def _worst_column_ratio(n: int, clip=B.clipped_numerator) -> Fraction:
    worst = Fraction(0)
    for c in range(n):
        a, b = _p_one(c, n, clip), _p_one(c + 1, n, clip)
        worst = max(worst, a / b, b / a, (1 - a) / (1 - b), (1 - b) / (1 - a))
    return worst


@pytest.mark.parametrize("n", list(range(2, 41)) + [64, 100, 1000])
def test_column_privacy_exact(n):
    """Every count c and its neighbour c + 1 (add/remove or substitute): ratio <= r(n) (1+a)/(1-a), r <= 1 + 4/n."""
    r = B.column_ratio(n)
    assert r <= 1 + Fraction(4, n)
    assert _worst_column_ratio(n) <= r * _bias_factor(n)
    # r is attained by the ideal law (the statement is tight)
    ideal = max(B.clipped_bias(c + 1, n) / B.clipped_bias(c, n) for c in range(n))
    assert ideal == r


def test_column_privacy_mutant_wider_clip_caught():
    """Clipping to [1/8, 7/8] instead of [1/4, 3/4] breaks the stated ratio."""
    wide = lambda c, n: max(n // 2, min(4 * n - n // 2, 4 * c))  # noqa: E731
    for n in (8, 16, 40):
        assert _worst_column_ratio(n, wide) > B.column_ratio(n) * _bias_factor(n)


def test_product_privacy_exact_d2():
    """d = 2: every pair of count vectors moving each coordinate by <= 1; every 2-bit output; ratio <= r^2."""
    n = 6
    r2 = B.exp_epsilon(n, 2) * _bias_factor(n) ** 2
    law = {}
    for c in itertools.product(range(n + 1), repeat=2):
        ps = [_p_one(x, n) for x in c]
        law[c] = {bits: math.prod(p if b else 1 - p for p, b in zip(ps, bits)) for bits in itertools.product((0, 1), repeat=2)}
    worst = Fraction(0)
    for c in law:
        for dc in itertools.product((-1, 0, 1), repeat=2):
            nb = tuple(x + y for x, y in zip(c, dc))
            if nb in law:
                worst = max(worst, max(law[c][o] / law[nb][o] for o in law[c]))
    assert worst <= r2
    assert worst * _bias_factor(n) ** 2 >= B.exp_epsilon(n, 2)  # attained up to the rng bias


def _binom(n: int, p: Fraction):
    for c in range(n + 1):
        yield c, math.comb(n, c) * p**c * (1 - p) ** (n - c)


@pytest.mark.parametrize("n", [12, 72, 200])
@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(2, 5), Fraction(1, 2), Fraction(2, 3)])
def test_column_tv_exact(n, p):
    """|E[p~] - p| from the exact Binomial law <= e^{-n/72}/2 <= tv_bound(n, 1) (exactly n units)."""
    mean = sum(w * B.clipped_bias(c, n) for c, w in _binom(n, p))
    assert abs(mean - p) <= B.tv_bound(n, 1)


def test_column_tv_mutant_narrow_clip_caught():
    """Clipping to [3/8, 5/8] biases p = 1/3 far beyond the bound."""
    n, p = 200, Fraction(1, 3)
    narrow = lambda c: Fraction(max(3 * n, min(5 * n, 8 * c)), 8 * n)  # noqa: E731
    mean = sum(w * narrow(c) for c, w in _binom(n, p))
    assert abs(mean - p) > B.tv_bound(n, 1)


def test_product_tv_exact_d3():
    """The product law's exact TV <= sum of the columns' |E p~_j - p_j| <= tv_bound(n, d)."""
    n, P = 40, [Fraction(1, 3), Fraction(1, 2), Fraction(3, 5)]
    Q = []
    for p in P:
        Q.append(sum(w * B.clipped_bias(c, n) for c, w in _binom(n, p)))
    tv = Fraction(0)
    for bits in itertools.product((0, 1), repeat=3):
        a = math.prod(q if b else 1 - q for q, b in zip(Q, bits))
        b_ = math.prod(p if b else 1 - p for p, b in zip(P, bits))
        tv += abs(a - b_)
    assert tv / 2 <= B.tv_bound(n, 3)


def test_min_n_for_epsilon():
    for d, eps_exp in ((1, Fraction(3, 2)), (10, Fraction(5, 2)), (100, Fraction(27, 10))):
        n = B.min_n_for_epsilon(eps_exp, d)
        assert B.exp_epsilon(n, d) <= eps_exp
        assert (1 + Fraction(4, n - 4)) ** d > eps_exp  # n is at most a few above the smallest that fits


def test_draw_matches_law_chisq():
    """bernoulli_sample under SeededRandom against Ber(p~) per column; false-alarm rate 1e-6; a mutant fails."""
    n, counts = 10, [0, 3, 5, 10]
    rng = SeededRandom("bernoulli-chisq")
    T = 4000
    ones = [0] * len(counts)
    for _ in range(T):
        for j, b in enumerate(B.bernoulli_sample(counts, n, rng)):
            ones[j] += b
    crit = chi2_critical(2 * len(counts), 1e-6)

    def stat(ps):
        return sum((o - T * float(p)) ** 2 / (T * float(p) * (1 - float(p))) for o, p in zip(ones, ps))  # report

    assert stat([B.clipped_bias(c, n) for c in counts]) <= crit
    assert stat([Fraction(min(max(c, 1), n - 1), n) for c in counts]) > crit  # unclipped-ish law rejected


# ----------------------------------------------------------------------------- exact zCDP rho (certified)
def _renyi_over_alpha_lower(a: Fraction, b: Fraction, alpha: Fraction):
    """A certified lower bound (arb ball's lower end) on D_alpha(Ber(a) || Ber(b)) / alpha."""
    from flint import arb, fmpq

    def q(x):
        return arb(fmpq(x.numerator, x.denominator))

    al = q(alpha)
    s = q(a) ** al * q(b) ** (1 - al) + q(1 - a) ** al * q(1 - b) ** (1 - al)
    return (s.log() / (al - 1) / al).lower()


def _alpha_grid(n: int) -> list[Fraction]:
    out, x = [], Fraction(1) + Fraction(1, 64)
    while x <= 8 * n + 8:
        out.append(x)
        x = x * Fraction(33, 32)
    return out


def _exact_rho_lower(n: int, lam: int, numer=B.clipped_numerator):
    """max over every count c, both directions and an alpha grid of D_alpha / alpha of the implemented laws."""
    from flint import arb

    best = arb(0)
    grid = _alpha_grid(n)
    for c in range(n):
        x, y = (B.implemented_one(numer(cc, n), n, lam) for cc in (c, c + 1))
        if x == y:
            continue
        for p, q in ((x, y), (y, x)):
            for al in grid:
                best = best.max(_renyi_over_alpha_lower(p, q, al))
    return best


@pytest.mark.parametrize("lam", [2, 128])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 10, 13, 24, 37, 64, 100])
def test_column_rho_bounds_exact_renyi_of_implemented_law(n, lam):
    """column_rho >= D_alpha/alpha of the implemented law at every count and alpha tried (lam = 2 makes the rng's
    rounding visible), and at the real lam within 3% of that exact maximum (the stated rho is the exact one,
    certified; at lam = 2 the rounding box around the segment's ends is wide, so only soundness is checked)."""
    from flint import arb, fmpq

    rho = B.column_rho(n, lam)
    exact = _exact_rho_lower(n, lam)
    r = arb(fmpq(rho.numerator, rho.denominator))
    assert (r - exact).lower() >= 0
    if lam >= 64:
        assert (r - exact * arb("1.03")).upper() <= 0


def test_column_rho_is_far_below_the_pure_conversion():
    """The issue's gap: (ln r + bias)^2 / 2 is 2.3-2.6x the certified exact rho for n >= 37."""
    from dpspark.privacy import LogEpsilon, PureDP, pure_to_zcdp
    from dpspark.rng import bias_epsilon

    for n in (37, 100, 1000, 10**6):
        old = pure_to_zcdp(PureDP(LogEpsilon(B.column_ratio(n), bias_epsilon(B.column_bias_draws(n), LAM)))).rho
        new = B.column_rho(n, LAM)
        assert Fraction(2) <= old / new <= Fraction(27, 10)
        assert B.product_rho(n, 7, LAM) == 7 * new


def test_column_rho_mutant_middle_pair_only_is_caught(monkeypatch):
    """A certificate that checks only the pair at c = n/2 (ignoring the clip edges) falls below the exact rho."""
    n = 40

    def middle_only(n_, lam):
        c = n_ // 2
        return [(Fraction(c, n_), Fraction(c + 1, n_))]

    B.column_rho.cache_clear()
    monkeypatch.setattr(B, "_rho_candidates", middle_only)
    try:
        from flint import arb, fmpq

        bad = B.column_rho(n, LAM)
        assert (_exact_rho_lower(n, LAM) - arb(fmpq(bad.numerator, bad.denominator))).lower() > 0
    finally:
        B.column_rho.cache_clear()


# ----------------------------------------------------------------------------- the floored count (the mechanism)
def _floor_law(c: int, N: int, n0: int, L: int, denom=B.denominator) -> Fraction:
    """Implemented Pr[bit = 1] of the mechanism's draw at count c of N units (exact)."""
    D = denom(N, n0)
    return B.implemented_one_at(B.clipped_numerator(c, D), D, L)


def _neighbour_pairs(n_max: int):  # type: ignore[no-untyped-def]
    """Every (c, N) -> (c', N') one unit can cause: a record changed (N fixed, c moves by <= 1), a unit added
    ((c, N + 1) or (c + 1, N + 1)) - and, by symmetry of the ratio test, removed."""
    for N in range(0, n_max + 1):
        for c in range(0, N + 1):
            for c2 in (c - 1, c + 1):
                if 0 <= c2 <= N:
                    yield (c, N), (c2, N)
            if N < n_max:
                yield (c, N), (c, N + 1)
                yield (c, N), (c + 1, N + 1)


@pytest.mark.parametrize("n0", [4, 8, 12, 20])
@pytest.mark.parametrize("lam", [2, LAM])
def test_floor_column_privacy_exact(n0: int, lam: int) -> None:
    """Every state (c, N), N <= n0 + 9, and every neighbour: both outputs' implemented ratio <= (1 + 4/n0) times
    the rounding factor 1 + 2^(2 - L) <= (1 + a)/(1 - a); the ideal law attains 1 + 4/n0 exactly.
    MUTANT: no floor (D = N) - caught."""
    n_max = n0 + 9
    L = B.public_bits(n_max, lam)
    stated = (1 + Fraction(4, n0)) * (1 + Fraction(4, 1 << L))
    a = Fraction(1, 1 << lam)
    assert 1 + Fraction(4, 1 << L) <= (1 + a) / (1 - a)

    def worst(denom) -> Fraction:  # type: ignore[no-untyped-def]
        w = Fraction(0)
        for (c, N), (c2, N2) in _neighbour_pairs(n_max):
            x, y = _floor_law(c, N, n0, L, denom), _floor_law(c2, N2, n0, L, denom)
            w = max(w, x / y, y / x, (1 - x) / (1 - y), (1 - y) / (1 - x))
        return w

    assert worst(B.denominator) <= stated
    ideal = max(B.clipped_bias(c2, max(N2, n0)) / B.clipped_bias(c, max(N, n0)) for (c, N), (c2, N2) in _neighbour_pairs(n_max))
    assert ideal == 1 + Fraction(4, n0)
    assert worst(lambda N, n0_: max(N, 1)) > stated  # MUTANT: D = N


def test_floor_units_is_the_smallest_multiple_of_four() -> None:
    for d, target in ((1, Fraction(3, 2)), (10, Fraction(5, 2)), (100, Fraction(27, 10)), (3, Fraction(9))):
        n0 = B.floor_units(target, d)
        assert n0 % 4 == 0 and B.floor_exp_epsilon(n0, d) <= target
        assert n0 == 4 or B.floor_exp_epsilon(n0 - 4, d) > target


def _floor_exact_rho_lower(n0: int, n_max: int, L: int):  # type: ignore[no-untyped-def]
    """max over every reachable pair (both directions) and an alpha grid of D_alpha / alpha (certified lower)."""
    from flint import arb

    best = arb(0)
    grid = _alpha_grid(n0)
    for (c, N), (c2, N2) in _neighbour_pairs(n_max):
        x, y = _floor_law(c, N, n0, L), _floor_law(c2, N2, n0, L)
        if x == y:
            continue
        for p, q in ((x, y), (y, x)):
            for al in grid:
                best = best.max(_renyi_over_alpha_lower(p, q, al))
    return best


@pytest.mark.parametrize("lam", [2, 128])
@pytest.mark.parametrize("n0", [4, 8, 16])
def test_floor_column_rho_bounds_exact_renyi_of_implemented_law(n0: int, lam: int) -> None:
    """floor_column_rho >= D_alpha/alpha of the implemented law at every reachable pair (N up to n0 + 4) and
    alpha tried; at the real lam within 3% of that maximum."""
    from flint import arb, fmpq

    n_max = n0 + 4
    L = B.public_bits(n_max, lam)
    rho = B.floor_column_rho(n0, L)
    exact = _floor_exact_rho_lower(n0, n_max, L)
    assert (arb(fmpq(rho.numerator, rho.denominator)) - exact).lower() >= 0
    if lam >= 64:
        assert (arb(fmpq(rho.numerator, rho.denominator)) - exact * arb("1.03")).upper() <= 0


def test_floor_column_rho_mutant_band_middle_only_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A certificate over the band's middle pair only (no clip corners of the hexagon) falls below the exact rho."""
    from flint import arb, fmpq

    n0, lam = 16, LAM
    L = B.public_bits(n0 + 4, lam)
    B.floor_column_rho.cache_clear()
    monkeypatch.setattr(B, "_floor_candidates", lambda n0_, L_: [(Fraction(1, 2), Fraction(1, 2) + Fraction(1, n0_))])
    try:
        bad = B.floor_column_rho(n0, L)
        assert (_floor_exact_rho_lower(n0, n0 + 4, L) - arb(fmpq(bad.numerator, bad.denominator))).lower() > 0
    finally:
        B.floor_column_rho.cache_clear()


@pytest.mark.parametrize("N", [150, 300])
@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(1, 2), Fraction(2, 3)])
def test_floor_estimate_is_unbiased_below_max_units(N: int, p: Fraction) -> None:
    """Issue 25: with N units under max_units = 400 (and N >= n0 = 40), |E[p~] - p| from the exact Binomial(N, p)
    law <= e^{-N/72}/2 <= tv_bound(N, 1). MUTANT: dividing by max_units (the old estimator) - caught, with
    E[p~] about p N / 400 before the clip."""
    n0, n_max = 40, 400
    mean = sum(w * B.clipped_bias(c, B.denominator(N, n0)) for c, w in _binom(N, p))
    assert abs(mean - p) <= B.tv_bound(N, 1)
    old = sum(w * B.clipped_bias(c, n_max) for c, w in _binom(N, p))
    assert abs(old - p) > B.tv_bound(N, 1)


def test_floor_draw_matches_law_chisq() -> None:
    """floor_sample under SeededRandom against the implemented law per column; false-alarm rate 1e-6; D = N
    above the floor; a mutant law (dividing by max_units) fails."""
    counts, units, n0, n_max = [0, 3, 5, 9], 9, 8, 40
    L = B.public_bits(n_max, LAM)
    rng = SeededRandom("bernoulli-floor-chisq")
    T = 4000
    ones = [0] * len(counts)
    for _ in range(T):
        for j, b in enumerate(B.floor_sample(counts, units, n0, L, rng)):
            ones[j] += b
    crit = chi2_critical(2 * len(counts), 1e-6)

    def stat(ps):  # type: ignore[no-untyped-def]
        return sum((o - T * float(p)) ** 2 / (T * float(p) * (1 - float(p))) for o, p in zip(ones, ps))  # report

    assert stat([_floor_law(c, units, n0, L) for c in counts]) <= crit
    assert stat([B.clipped_bias(c, n_max) for c in counts]) > crit
