"""The public rule that releases several quantiles of one column in one joint mechanism (issue 34 §4).

Quantile aggregates of the same column on the same grid (column, lo, hi, bins and whether the bounds are chosen
privately) form a family. A family is released by ONE :class:`~.joint_split.SplitJointLaw` per group when

* it has >= 2 members with distinct q, none of them ``quantiles = "independent"``, and
* the law fits its public limits: C(bins + m, m) <= AUTO_TUPLES tuples (about 0.1 s a group; the work per group
  is linear in the tuples, so a release with many groups stays quick), and the int64 bound on Q x rows;

otherwise each member keeps its own exponential mechanism (:mod:`.quantile`). ``quantiles = "joint"`` on a member
makes the rule a requirement and raises the tuple limit to MAX_TUPLES (about 1-2 s a group): a family that cannot
be joint is a configuration error, found before any data is read. Every input is public, so the choice is stated in the plan and the manifest and never depends on the data.

Budget: the joint law takes the sum of its members' shares (each member's share as if independent, so the plan's
split is unchanged) and is charged once for the family; its sensitivity bookkeeping is the single quantile's:
k groups per unit, c rows per group (joint_split.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError
from dpspark.mechanisms.groups.joint_quantile import gap_targets
from dpspark.mechanisms.groups.joint_split import MAX_TUPLES, SplitJointLaw, tuple_count

#: the tuple limit of the "auto" rule (``quantiles = "joint"`` allows up to MAX_TUPLES)
AUTO_TUPLES = 1 << 18


@dataclass(frozen=True)
class JointMember:
    """One member of a joint family: the shared law, this member's index in q order, the family's names."""

    law: SplitJointLaw
    index: int
    names: tuple[str, ...]

    @property
    def first(self) -> str:
        """The member whose turn in the draw order draws the family (the first in the plan's order)."""
        return self.names[0]

    def describe(self) -> dict[str, Any]:
        return {**self.law.describe(), "joint_with": list(self.names)}


def _key(agg: Aggregate) -> tuple[Any, ...]:
    return (agg.column, agg.lo, agg.hi, agg.grid, agg.auto)


def _fits(members: Sequence[Aggregate], max_rows: int, limit: int) -> str | None:
    """Why the family cannot be joint under a tuple ``limit`` (None: it can)."""
    qs = [a.q for a in members]
    if len(set(qs)) != len(qs):
        return "two of them ask for the same q"
    B = members[0].grid
    assert B is not None
    if tuple_count(B, len(members)) > limit:
        return f"C(bins + m, m) = {tuple_count(B, len(members))} tuples exceed {limit} (lower bins)"
    Q = gap_targets([q for q in qs if q is not None])[0]
    if 2 * (len(members) + 2) * Q * max(max_rows, 1) >= 1 << 62:
        return "the common denominator of q times the row bound is too large"
    return None


def families(quants: Sequence[Aggregate], max_rows: int) -> list[tuple[Aggregate, ...]]:
    """The joint families of the public rule (module docstring), each in the plan's order; GroupsError when a
    member requires ``joint`` and its family cannot be."""
    by_key: dict[tuple[Any, ...], list[Aggregate]] = {}
    for a in quants:
        if a.joint != "independent":
            by_key.setdefault(_key(a), []).append(a)
    out = []
    for members in by_key.values():
        forced = any(a.joint == "joint" for a in members)
        why = ("it is the only quantile of its column and grid" if len(members) < 2 else
               _fits(members, max_rows, MAX_TUPLES if forced else AUTO_TUPLES))
        if why is None:
            out.append(tuple(members))
        elif forced:
            names = ", ".join(repr(a.name) for a in members)
            raise GroupsError(f"quantiles = \"joint\" ({names}) cannot be released jointly: {why}; use "
                              "quantiles = \"independent\"")
    return out


def joint_law(members: Sequence[Aggregate], bounds: Bounds, epsilon: Fraction, lam: int,
              max_rows: int) -> dict[str, JointMember]:
    """The family's law at ``epsilon`` (the sum of its members' shares), as a member entry per name."""
    order = sorted(members, key=lambda a: a.q)  # type: ignore[arg-type, return-value]
    names = tuple(a.name for a in members)
    law = SplitJointLaw([a.q for a in order], order[0].grid, bounds.c, bounds.k, epsilon, lam,  # type: ignore[misc]
                        max_rows=max_rows, what=f"joint quantiles {', '.join(map(repr, names))}")
    return {a.name: JointMember(law, order.index(a), names) for a in members}
