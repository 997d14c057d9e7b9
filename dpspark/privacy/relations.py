"""Neighbour relations as values, and how many steps of one cover a step of another.

* ``AddRemove(n)``: add or remove one unit, among datasets of at most n units
  (n public). dpspark's primary relation: config epsilon and rho are amounts
  under it.
* ``Substitute(n)``: change one unit's records, keeping its id, among datasets
  of exactly n units (the papers' model).
* ``Unbounded()``: add or remove one unit, with no bound on the number of units.

:func:`steps` is the group size k such that every neighbouring pair under the
target relation is joined by a path of k neighbouring pairs under the source
relation; group privacy (:func:`dpspark.privacy.conversions.group_privacy`)
then turns a guarantee under the source into one under the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from dpspark.privacy._encode import dec_int, require_keys
from dpspark.privacy.errors import DescriptionError, RelationError


#: The fixed public n of a release that declares no ``max_units`` (groups and answers only): 2^40 ~ 1.1 * 10^12
#: units, over a hundred times the world's population, so no real input reaches it. Such a release is stated
#: under ``AddRemove(UNITS_CAP)``, which covers ``AddRemove(m)`` for every m <= 2^40 (:func:`steps`), so it
#: composes with releases that declare their own n (up to the cap). Why 2^40 and not more (each bound is
#: checked against this constant by tests/unit/core/test_units_cap.py): the noisy unit count's exact range
#: is [0, 2^40] (:data:`dpspark.noise.count_quantile.DEFAULT_CAP`), so it covers every unit kept; a groups
#: statistic's discrete Gaussian spans up to about 2^5 n grid units (a sum over [-a, a] at grid g = 16), which
#: must stay < 2^48 (n < 2^44: the tightest bound, 2^3 of room at 2^40); the answers' Gaussian window radius is n
#: (< 2^48); decimal(38,0) sums hold n x 2^63 (answers' largest fixed-point clip bound: 2^103 < 10^38); the
#: private selection's keep table saturates long before n (its cost does not grow with n).
UNITS_CAP = 1 << 40


def units_limit_words(n: int) -> str:
    """The public bound n on the number of units, in words: the cap reads as no limit (no user chose it)."""
    if n == UNITS_CAP:
        return "no limit on the number of units (max_units not declared; the fixed cap is 2^40 ~ 1.1 * 10^12)"
    return f"at most n = {n} units"


def _check_n(n: Any) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise RelationError(f"n (the public bound on units) must be an int >= 1, got {n!r}")
    return n


@dataclass(frozen=True)
class AddRemove:
    """Add or remove one unit, among datasets of at most ``n`` units (n public)."""

    n: int

    def __post_init__(self) -> None:
        _check_n(self.n)

    def text(self) -> str:
        """The relation in words."""
        if self.n == UNITS_CAP:
            return f"add or remove one unit; {units_limit_words(self.n)}"
        return f"add or remove one unit, among datasets of at most n = {self.n} units (n public)"

    def describe(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": "add_remove", "n": self.n, "text": self.text()}


@dataclass(frozen=True)
class Substitute:
    """Change one unit's records (its id kept), among datasets of exactly ``n`` units."""

    n: int

    def __post_init__(self) -> None:
        _check_n(self.n)

    def text(self) -> str:
        """The relation in words."""
        if self.n == UNITS_CAP:
            return ("change one unit's records (its id kept), among datasets of any one size (max_units not "
                    "declared; the fixed cap is 2^40 ~ 1.1 * 10^12)")
        return f"change one unit's records (its id kept), among datasets of exactly n = {self.n} units"

    def describe(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": "substitute", "n": self.n, "text": self.text()}


@dataclass(frozen=True)
class Unbounded:
    """Add or remove one unit, with no bound on the number of units."""

    def text(self) -> str:
        """The relation in words."""
        return "add or remove one unit, any number of units"

    def describe(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": "unbounded", "text": self.text()}


Relation = Union[AddRemove, Substitute, Unbounded]


def relation_from_description(obj: Any, where: str = "relation") -> Relation:
    """Inverse of ``describe()`` for the three relations (``text`` is ignored)."""
    d = require_keys(obj, ("kind",), where)
    tag = d["kind"]
    cls = _BY_TAG.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise DescriptionError(f"{where}: unknown relation kind {tag!r}")
    if cls is Unbounded:
        return Unbounded()
    n = dec_int(require_keys(d, ("n",), where)["n"], f"{where}.n", 4096)
    try:
        return cls(n)
    except RelationError as exc:
        raise DescriptionError(f"{where}: {exc}") from None


#: the ``kind`` tag of a description -> its relation class
_BY_TAG: dict[str, Any] = {"unbounded": Unbounded, "add_remove": AddRemove, "substitute": Substitute}


def steps(source: Relation, target: Relation) -> int:
    """Group size k: each target-neighbour pair is a path of k source-neighbour pairs (RelationError if none).

    * same relation: 1. AddRemove(n) covers AddRemove(m) for m <= n, and
      Unbounded covers every AddRemove(m): their pairs are a subset.
    * Substitute(m) from AddRemove(n), m <= n, or from Unbounded: 2. Replacing
      u by u' is x -> x - {u} (m - 1 units) -> x - {u} + {u'} (m units), both
      steps within "at most n".
    * Nothing covers Unbounded except itself (datasets above any n), and
      Substitute(n) covers only Substitute(n) (it never changes the size).
      Guarantees under Unbounded after truncating to n units come from
      :func:`dpspark.privacy.conversions.truncation_to_unbounded` instead.
    """
    if isinstance(target, Unbounded):
        if isinstance(source, Unbounded):
            return 1
    elif isinstance(target, AddRemove):
        if isinstance(source, Unbounded) or (isinstance(source, AddRemove) and target.n <= source.n):
            return 1
    elif isinstance(target, Substitute):
        if isinstance(source, Substitute) and source.n == target.n:
            return 1
        if isinstance(source, Unbounded) or (isinstance(source, AddRemove) and target.n <= source.n):
            return 2
    raise RelationError(f"a guarantee under [{source.text()}] implies nothing under [{target.text()}]")
