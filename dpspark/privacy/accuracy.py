"""One accuracy statement: a list of exact claims, each "quantity <= bound with probability >= 1 - beta".

A claim covers the forms dpspark's releases need:

* histogram per-query (a, beta) on counts above a threshold:
  ``AccuracyClaim("abs_error", a, beta, "per_query", count_above=tau)``;
* simultaneous (a, beta): ``scope="simultaneous"``;
* a deterministic bound, every answer within R with probability 1:
  :meth:`AccuracyClaim.deterministic` (beta = 0);
* a total-variation claim for samplers, d_TV(law of the output, P) <= alpha
  given at least n units: :meth:`AccuracyClaim.tv_distance`;
* any conditional claim: ``condition`` holds the condition in words (e.g.
  "assuming exactly n units").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Optional

from dpspark.exact import parse_rational
from dpspark.privacy._encode import dec_frac, dec_int, enc_frac, require_keys
from dpspark.privacy.errors import DescriptionError, PrivacyError

#: The error of each released answer, |noisy - true|.
ABS_ERROR = "abs_error"
#: Total-variation distance between the output's law (over data and coins) and the target distribution.
TV_DISTANCE = "tv_distance"
#: Scopes: each answer separately, all answers at once, or the single output of a sampler/learner.
SCOPES = ("per_query", "simultaneous", "output")


@dataclass(frozen=True, init=False)
class AccuracyClaim:
    """``quantity <= bound`` with probability >= 1 - ``beta`` over ``scope``, under the stated conditions.

    ``count_above``: the claim covers only answers whose true count is > it
    (None: every answer). ``min_units``: the claim needs at least that many
    units (None: no requirement). ``condition``: any further condition, in words.
    """

    quantity: str
    bound: Fraction
    beta: Fraction
    scope: str
    count_above: Optional[int]
    min_units: Optional[int]
    condition: str

    def __init__(
        self,
        quantity: str,
        bound: Any,
        beta: Any,
        scope: str,
        count_above: Optional[int] = None,
        min_units: Optional[int] = None,
        condition: str = "",
    ) -> None:
        if not isinstance(quantity, str) or not quantity:
            raise PrivacyError("quantity must be a non-empty string")
        if scope not in SCOPES:
            raise PrivacyError(f"scope must be one of {SCOPES}, got {scope!r}")
        b = parse_rational(bound, "bound")
        p = parse_rational(beta, "beta")
        if b < 0:
            raise PrivacyError(f"bound must be >= 0, got {b}")
        if not 0 <= p <= 1:
            raise PrivacyError(f"beta must lie in [0, 1], got {p}")
        for name, v in (("count_above", count_above), ("min_units", min_units)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise PrivacyError(f"{name} must be an int or None, got {v!r}")
        if count_above is not None and count_above < 0:
            raise PrivacyError("count_above must be >= 0 (None: every answer)")
        if min_units is not None and min_units < 0:
            raise PrivacyError("min_units must be >= 0")
        if not isinstance(condition, str):
            raise PrivacyError("condition must be a string")
        for k, v in (
            ("quantity", quantity), ("bound", b), ("beta", p), ("scope", scope),
            ("count_above", count_above), ("min_units", min_units), ("condition", condition),
        ):
            object.__setattr__(self, k, v)

    @classmethod
    def deterministic(
        cls, bound: Any, scope: str = "simultaneous", quantity: str = ABS_ERROR, condition: str = ""
    ) -> "AccuracyClaim":
        """Every answer within ``bound`` with probability 1 (bounded noise)."""
        return cls(quantity, bound, 0, scope, condition=condition)

    @classmethod
    def tv_distance(cls, alpha: Any, min_units: int, beta: Any = 0, condition: str = "") -> "AccuracyClaim":
        """d_TV(law of the output, target) <= alpha when there are at least ``min_units`` units."""
        return cls(TV_DISTANCE, alpha, beta, "output", min_units=min_units, condition=condition)

    @property
    def deterministic_claim(self) -> bool:
        """True when beta = 0 (the bound holds with probability 1)."""
        return self.beta == 0

    def text(self) -> str:
        """The claim in plain words."""
        what = {"abs_error": "|noisy - true|", "tv_distance": "d_TV(output law, target)"}.get(self.quantity, self.quantity)
        where = {"per_query": "for each answer", "simultaneous": "for all answers at once", "output": "for the output"}[self.scope]
        prob = "always (probability 1)" if self.beta == 0 else f"with probability >= 1 - {self.beta}"
        parts = [f"{where}: {what} <= {self.bound}, {prob}"]
        if self.count_above is not None:
            parts.append(f"only for true counts > {self.count_above}")
        if self.min_units is not None:
            parts.append(f"needs at least {self.min_units} units")
        if self.condition:
            parts.append(self.condition)
        return "; ".join(parts)

    def describe(self) -> dict[str, Any]:
        """JSON-ready exact form."""
        return {
            "quantity": self.quantity,
            "bound": enc_frac(self.bound),
            "beta": enc_frac(self.beta),
            "scope": self.scope,
            "count_above": self.count_above,
            "min_units": self.min_units,
            "condition": self.condition,
            "text": self.text(),
        }

    @classmethod
    def from_description(cls, obj: Any, where: str = "claim") -> "AccuracyClaim":
        """Inverse of :meth:`describe` (``text`` is ignored)."""
        d = require_keys(obj, ("quantity", "bound", "beta", "scope", "count_above", "min_units", "condition"), where)
        opt = {k: None if d[k] is None else dec_int(d[k], f"{where}.{k}", 4096) for k in ("count_above", "min_units")}
        if not isinstance(d["quantity"], str) or not isinstance(d["scope"], str) or not isinstance(d["condition"], str):
            raise DescriptionError(f"{where}: quantity, scope and condition must be strings")
        try:
            return cls(
                d["quantity"], dec_frac(d["bound"], f"{where}.bound"), dec_frac(d["beta"], f"{where}.beta"),
                d["scope"], opt["count_above"], opt["min_units"], d["condition"],
            )
        except DescriptionError:
            raise
        except PrivacyError as exc:
            raise DescriptionError(f"{where}: {exc}") from None


@dataclass(frozen=True, init=False)
class AccuracyStatement:
    """A release's accuracy: ``claims`` (each exact) plus ``notes`` in words."""

    claims: tuple[AccuracyClaim, ...]
    notes: str

    def __init__(self, claims: Iterable[AccuracyClaim], notes: str = "") -> None:
        cs = tuple(claims)
        if not all(isinstance(c, AccuracyClaim) for c in cs):
            raise TypeError("claims must be AccuracyClaim values")
        if not isinstance(notes, str):
            raise TypeError("notes must be a string")
        object.__setattr__(self, "claims", cs)
        object.__setattr__(self, "notes", notes)

    @classmethod
    def histogram(
        cls,
        a_per_query: int,
        beta_per_query: Any,
        per_query_above: int,
        a_simultaneous: int,
        beta_simultaneous: Any,
        notes: str = "",
    ) -> "AccuracyStatement":
        """Today's histogram statement: per-query (a, beta) on counts > per_query_above (-1: all), simultaneous (a, beta)."""
        if not isinstance(per_query_above, int) or per_query_above < -1:
            raise PrivacyError("per_query_above must be an int >= -1 (-1: every count)")
        above = None if per_query_above == -1 else per_query_above
        return cls(
            (
                AccuracyClaim(ABS_ERROR, a_per_query, beta_per_query, "per_query", count_above=above),
                AccuracyClaim(ABS_ERROR, a_simultaneous, beta_simultaneous, "simultaneous"),
            ),
            notes,
        )

    def find(self, scope: str, quantity: str = ABS_ERROR) -> AccuracyClaim:
        """The first claim with this scope and quantity (PrivacyError if none)."""
        for c in self.claims:
            if c.scope == scope and c.quantity == quantity:
                return c
        raise PrivacyError(f"no {quantity} claim with scope {scope!r}")

    # histogram views (the fields of today's AccuracyStatement / AccuracyInfo)
    @property
    def a_per_query(self) -> int:
        """Per-query error bar a (an int for histograms)."""
        return _as_int(self.find("per_query").bound)

    @property
    def beta_per_query(self) -> Fraction:
        """Per-query failure probability."""
        return self.find("per_query").beta

    @property
    def per_query_above(self) -> int:
        """The per-query claim covers true counts > this (-1: every count)."""
        above = self.find("per_query").count_above
        return -1 if above is None else above

    @property
    def a_simultaneous(self) -> int:
        """Simultaneous error bar a."""
        return _as_int(self.find("simultaneous").bound)

    @property
    def beta_simultaneous(self) -> Fraction:
        """Simultaneous failure probability."""
        return self.find("simultaneous").beta

    def text(self) -> str:
        """The statement in plain words, one claim per line."""
        lines = [c.text() for c in self.claims]
        if self.notes:
            lines.append(f"Notes: {self.notes}")
        return "\n".join(lines)

    def describe(self) -> dict[str, Any]:
        """JSON-ready exact form (round trip: :meth:`from_description`)."""
        return {"claims": [c.describe() for c in self.claims], "notes": self.notes}

    @classmethod
    def from_description(cls, obj: Any, where: str = "accuracy") -> "AccuracyStatement":
        """Inverse of :meth:`describe`."""
        d = require_keys(obj, ("claims", "notes"), where)
        if not isinstance(d["claims"], list) or not isinstance(d["notes"], str):
            raise DescriptionError(f"{where}: claims must be a list and notes a string")
        return cls([AccuracyClaim.from_description(c, f"{where}.claims[{i}]") for i, c in enumerate(d["claims"])], d["notes"])


def _as_int(x: Fraction) -> int:
    if x.denominator != 1:
        raise PrivacyError(f"error bar {x} is not an integer")
    return x.numerator
