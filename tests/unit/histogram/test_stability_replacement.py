"""StabilityHistogram under replacement: (2 eps, delta), checked on the exact output law of the two changed bins.

For every pair of counts (a, b) -> (a - 1, b + 1) with a + b <= n, the output
laws P, Q of the two changed bins are enumerated with rationals from the
mechanism's exact scaled CDF (the implemented law of M(c, U) for uniform U), and
the hockey-stick divergence H_k(P||Q) = sum_o max(0, P(o) - k Q(o)) (the
smallest delta for which every output set T has P(T) <= k Q(T) + delta) is
computed at k = e^(2 eps~) = (p/q)^2 in both directions. The other bins keep
their law and are independent, so they do not change H.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.mechanisms.histogram.stability import stability_histogram, stability_mechanism, stability_threshold
from dpspark.release.manifest import read_manifest
from dpspark.rng import SeededRandom
from dpspark.universe import IntRangeUniverse
from tests.support.release_support import write

CASES = [(8, "2", "1/4"), (10, "3", "1/3"), (6, "4", "1/4"), (12, "2", "1/5")]
ABSENT = None


def bin_law(mech: object, c: int, tau: int) -> dict[int | None, Fraction]:
    """One bin's exact output law: absent for c = 0, else M(c, U) when > tau, absent otherwise."""
    if c == 0:
        return {ABSENT: Fraction(1)}
    out: dict[int | None, Fraction] = {}
    prev = 0
    for v in range(mech.n + 1):  # type: ignore[attr-defined]
        cur = mech.scaled_cdf(c, v)  # type: ignore[attr-defined]
        key = v if v > tau else ABSENT
        out[key] = out.get(key, Fraction(0)) + Fraction(cur - prev, mech.d)  # type: ignore[attr-defined]
        prev = cur
    return out


def hockey_stick(p: dict, q: dict, k: Fraction) -> Fraction:
    return sum((max(Fraction(0), p.get(o, 0) - k * q.get(o, 0)) for o in set(p) | set(q)), Fraction(0))


def pair(a_law: dict, b_law: dict) -> dict:
    return {(x, y): px * py for x, px in a_law.items() for y, py in b_law.items()}


def worst_replacement(mech: object, tau: int, k: Fraction) -> Fraction:
    """max over replacement pairs (a, b) -> (a - 1, b + 1), a + b <= n, and both directions, of H_k."""
    n = mech.n  # type: ignore[attr-defined]
    laws = [bin_law(mech, c, tau) for c in range(n + 1)]
    worst = Fraction(0)
    for a in range(1, n + 1):
        for b in range(0, n - a + 1):
            p, q = pair(laws[a], laws[b]), pair(laws[a - 1], laws[b + 1])
            worst = max(worst, hockey_stick(p, q, k), hockey_stick(q, p, k))
    return worst


def delta_m(mech: object, tau: int) -> Fraction:
    return Fraction(mech.d - mech.scaled_cdf(1, tau), mech.d)  # type: ignore[attr-defined]


@pytest.mark.parametrize("n, eps, delta", CASES)
def test_replacement_is_2eps_delta_exactly(n: int, eps: str, delta: str) -> None:
    mech = stability_mechanism(n, eps, delta)
    tau = stability_threshold(mech, delta)
    d_m = delta_m(mech, tau)
    assert 0 < d_m <= Fraction(delta) and tau < n
    worst = worst_replacement(mech, tau, mech.exp_eps**2)
    assert worst == d_m  # <= the stated delta, and attained (the pair (1, 0) -> (0, 1))
    assert worst < (1 + mech.exp_eps) * d_m  # the generic group-privacy bound was looser
    # teeth: the same check rejects claims that are too strong
    assert worst_replacement(mech, tau, mech.exp_eps) > d_m  # eps~ instead of 2 eps~ for replacement
    if tau >= 1:  # a mutant that releases above tau - 1 but states delta_M(tau)
        assert worst_replacement(mech, tau - 1, mech.exp_eps**2) > d_m


def test_release_manifest_states_the_tighter_replacement_delta(tmp_path: Path) -> None:
    universe = IntRangeUniverse(0, 99)
    n, eps, delta = 12, "2", "1/5"
    mech = stability_mechanism(n, eps, delta)
    rel = stability_histogram(([3, 7], [5, 2]), universe.size, n, mech, delta, SeededRandom(b"rep"))
    assert rel.privacy.replacement_delta == rel.privacy.delta
    config = {"epsilon": eps, "delta": delta, "beta": "1/20", "mechanism": "stability"}
    m = read_manifest(write(tmp_path, universe, ["v"], rel, config=config))
    assert m.replacement.delta == m.add_remove.delta
    assert m.replacement.exp_eps == m.add_remove.exp_eps**2
    assert "independent" in m.replacement.theorem
