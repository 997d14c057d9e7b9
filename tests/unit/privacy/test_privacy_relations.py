"""Relations, group privacy, truncation and composition, checked on exact laws of small mechanisms."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import pytest

from dpspark.privacy import (
    AddRemove,
    ApproxDP,
    IncompatibleMeasures,
    LogEpsilon,
    PureDP,
    RelationError,
    Substitute,
    Unbounded,
    ZCDP,
    compose,
    convert_relation,
    group_privacy,
    parallel,
    pure_to_zcdp,
    steps,
    truncation_to_unbounded,
)


def hockey_stick(p: dict, q: dict, ratio: F) -> F:
    """Exact sup_S P(S) - ratio * Q(S) = sum_y max(0, P(y) - ratio Q(y))."""
    return sum((max(F(0), p.get(y, F(0)) - ratio * q.get(y, F(0))) for y in set(p) | set(q)), F(0))


def test_steps_between_relations() -> None:
    assert steps(AddRemove(10), AddRemove(10)) == 1
    assert steps(AddRemove(10), AddRemove(5)) == 1
    assert steps(Unbounded(), AddRemove(5)) == 1
    assert steps(AddRemove(10), Substitute(10)) == 2
    assert steps(Unbounded(), Substitute(3)) == 2
    assert steps(Substitute(4), Substitute(4)) == 1
    for src, dst in [(AddRemove(5), AddRemove(6)), (AddRemove(5), Unbounded()), (Substitute(4), AddRemove(4)),
                     (Substitute(4), Substitute(5)), (AddRemove(3), Substitute(4))]:
        with pytest.raises(RelationError):
            steps(src, dst)
    with pytest.raises(RelationError):
        AddRemove(0)
    with pytest.raises(RelationError):
        AddRemove(True)  # type: ignore[arg-type]


def test_add_remove_to_substitute_amounts() -> None:
    e = LogEpsilon(F(3, 2), F(1, 2**126))
    assert convert_relation(PureDP(e), AddRemove(9), Substitute(9)) == PureDP(LogEpsilon(F(9, 4), F(2, 2**126)))
    assert convert_relation(ZCDP("1/8"), AddRemove(9), Substitute(9)) == ZCDP("1/2")
    got = convert_relation(ApproxDP(e, "1e-9"), AddRemove(9), Substitute(9))
    assert got == ApproxDP(2 * e, (1 + F(3, 2) / (1 - F(1, 2**126))) * F(1, 10**9))  # the manifest's replacement rule
    assert group_privacy(ApproxDP("1", "1/2"), 3).delta == 1  # capped


def test_two_step_group_privacy_is_exact_and_tight() -> None:
    """A three-dataset chain where each step is exactly (ln r, d)-DP and the ends are exactly (2 ln r, (1 + r) d)."""
    r, d = F(2), F(1, 1000)
    p2 = {"A": F(0), "B": F(1)}
    p1 = {"A": d, "B": 1 - d}
    p0 = {"A": (1 + r) * d, "B": 1 - (1 + r) * d}
    for x, y in [(p0, p1), (p1, p0), (p1, p2), (p2, p1)]:
        assert hockey_stick(x, y, r) <= d
    assert hockey_stick(p0, p1, r) == d
    claim = group_privacy(ApproxDP(LogEpsilon(r), d), 2)
    assert claim.epsilon == LogEpsilon(r * r)
    worst = max(hockey_stick(p0, p2, r * r), hockey_stick(p2, p0, r * r))
    assert worst == (1 + r) * d == claim.delta  # tight: no smaller delta works at 2 eps
    for wrong in (d, 2 * d):  # mutants: "delta unchanged" and "2 delta" are both violated
        assert worst > wrong


def _kept(x: frozenset, rank: dict, n: int) -> frozenset:
    return frozenset(sorted(x, key=rank.__getitem__)[:n])


def test_truncation_is_two_stable_and_the_unbounded_amount_is_exact() -> None:
    """Units with keys in {0, 1}; M = per-key counts of the kept units plus two-sided geometric noise of ratio r.

    The exact privacy loss of M between count vectors c, c' is ln(r) * |c - c'|_1, so the
    loss of M o T between Unbounded neighbours is ln(r) * max |hist(T(x)) - hist(T(x + u))|_1.
    """
    units = range(6)
    key = {u: u % 2 for u in units}
    rank = {u: (5 * u + 2) % 7 for u in units}  # the keyed-hash order (any fixed permutation)
    n, r = 3, F(3, 2)

    def hist(y: frozenset) -> tuple[int, int]:
        return (sum(1 for u in y if key[u] == 0), sum(1 for u in y if key[u] == 1))

    worst_steps = 0
    for size in range(len(units)):
        for x in map(frozenset, itertools.combinations(units, size)):
            for u in set(units) - x:
                a, b = _kept(x, rank, n), _kept(x | {u}, rank, n)
                assert len(a) <= n and len(b) <= n
                assert len(a ^ b) <= 2 and (len(a ^ b) < 2 or len(a) == len(b) == n)
                ha, hb = hist(a), hist(b)
                worst_steps = max(worst_steps, abs(ha[0] - hb[0]) + abs(ha[1] - hb[1]))
    assert worst_steps == 2
    claim = truncation_to_unbounded(PureDP(LogEpsilon(r)))
    assert claim == PureDP(LogEpsilon(r) * worst_steps)  # exact and tight
    assert truncation_to_unbounded(ZCDP("1/8")) == ZCDP("1/2")
    assert truncation_to_unbounded(ApproxDP("1", "1e-9")).delta == (1 + LogEpsilon.of(1).exp_upper()) * F(1, 10**9)


def test_sequential_composition_per_measure() -> None:
    e1, e2 = LogEpsilon(F(3, 2), F(1, 100)), LogEpsilon.of("1/4")
    assert compose([PureDP(e1), PureDP(e2)]) == PureDP(LogEpsilon(F(3, 2), F(26, 100)))
    assert compose([PureDP(e1), ApproxDP(e2, "1e-9"), ApproxDP("1", "2e-9")]) == ApproxDP(e1 + e2 + 1, F(3, 10**9))
    assert compose([ZCDP("1/8"), ZCDP("1/4")]) == ZCDP("3/8")
    assert compose([ZCDP("1/8"), PureDP("1/2")]) == ZCDP(F(1, 8) + F(1, 8))
    assert compose([ZCDP("1/8"), PureDP(e1)]) == ZCDP(F(1, 8) + pure_to_zcdp(PureDP(e1)).rho)
    assert compose([ApproxDP("1", "3/4"), ApproxDP("1", "1/2")]).delta == 1
    with pytest.raises(IncompatibleMeasures):
        compose([ZCDP("1/8"), ApproxDP("1", "1e-9")])


def test_sequential_composition_matches_an_exact_product_law() -> None:
    """Two independent randomized responses with ratios r1, r2: the joint worst ratio is r1 r2 exactly."""
    r1, r2 = F(3), F(5, 2)

    def rr(r: F, bit: int) -> dict:
        return {bit: r / (1 + r), 1 - bit: 1 / (1 + r)}

    worst = max(
        rr(r1, 0)[y1] * rr(r2, 0)[y2] / (rr(r1, 1)[y1] * rr(r2, 1)[y2]) for y1 in (0, 1) for y2 in (0, 1)
    )
    assert compose([PureDP(LogEpsilon(r1)), PureDP(LogEpsilon(r2))]) == PureDP(LogEpsilon(worst))


def test_parallel_composition_takes_the_worst_step() -> None:
    ln3 = LogEpsilon(3)  # 1.0986...
    assert parallel([PureDP("1.0986"), PureDP(ln3), PureDP("1/2")]) == PureDP(ln3)
    assert parallel([PureDP("1.0987"), PureDP(ln3)]) == PureDP("1.0987")
    assert parallel([ApproxDP("1", "1e-9"), ApproxDP("1/2", "1e-6"), PureDP("2")]) == ApproxDP("2", "1e-6")
    assert parallel([ZCDP("1/8"), PureDP("1")]) == ZCDP("1/2")
    with pytest.raises(IncompatibleMeasures):
        parallel([ZCDP("1/8"), ApproxDP("1", "1e-9")])
