"""One privacy statement: a measure under a neighbour relation, with the theorem that proves it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Optional

from dpspark.exact import parse_rational
from dpspark.privacy import composition, conversions
from dpspark.privacy._encode import require_keys
from dpspark.privacy.epsilon import LogEpsilon
from dpspark.privacy.errors import DescriptionError, PrivacyError
from dpspark.privacy.measures import ApproxDP, Measure, PureDP, ZCDP, measure_from_description
from dpspark.privacy.relations import AddRemove, Relation, Unbounded, relation_from_description, steps


@dataclass(frozen=True)
class PrivacyStatement:
    """``measure`` holds under ``relation``; ``theorem`` names the proof, ``notes`` adds detail.

    Build today's histogram statements with :meth:`from_exp_eps`. Convert with
    :meth:`under` (group privacy over relation steps), :meth:`to_zcdp` and
    :meth:`to_approx_dp`; combine with :func:`compose_statements` and
    :func:`parallel_statements`.
    """

    measure: Measure
    relation: Relation
    theorem: str
    notes: str = ""
    #: a delta the mechanism itself proves at 2 eps under Substitute(n) (StabilityHistogram: its two changed
    #: bins are independent coordinates), tighter than the generic (1 + e^eps) delta; None: generic rule
    replacement_delta: Optional[Fraction] = None

    def __post_init__(self) -> None:
        if not isinstance(self.measure, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"measure must be PureDP, ApproxDP or ZCDP, got {type(self.measure).__name__}")
        if not isinstance(self.theorem, str) or not isinstance(self.notes, str):
            raise TypeError("theorem and notes are strings")

    # -- today's form ---------------------------------------------------------------------------
    @classmethod
    def from_exp_eps(
        cls,
        exp_eps: Any,
        bias_epsilon: Any,
        delta: Any,
        theorem: str,
        relation: Relation,
        notes: str = "",
        replacement_delta: Any = None,
    ) -> "PrivacyStatement":
        """(eps, delta)-DP with eps = ln(exp_eps) + bias_epsilon exactly (pure when delta = 0)."""
        eps = LogEpsilon(parse_rational(exp_eps, "exp_eps"), parse_rational(bias_epsilon, "bias_epsilon"))
        d = parse_rational(delta, "delta")
        measure: Measure = PureDP(eps) if d == 0 else ApproxDP(eps, d)
        rd = None if replacement_delta is None else parse_rational(replacement_delta, "replacement_delta")
        return cls(measure, relation, theorem, notes, rd)

    # -- views ----------------------------------------------------------------------------------
    @property
    def pure(self) -> bool:
        """True for pure DP (including ApproxDP with delta = 0)."""
        return isinstance(self.measure, PureDP) or (isinstance(self.measure, ApproxDP) and self.measure.delta == 0)

    @property
    def epsilon(self) -> Optional[LogEpsilon]:
        """The exact epsilon (None for zCDP)."""
        return None if isinstance(self.measure, ZCDP) else self.measure.epsilon

    @property
    def exp_eps(self) -> Fraction:
        """The rational r of eps = ln(r) + f (PrivacyError for zCDP)."""
        return self._eps_or_raise().exp

    @property
    def bias_epsilon(self) -> Fraction:
        """The rational f of eps = ln(r) + f (PrivacyError for zCDP)."""
        return self._eps_or_raise().extra

    @property
    def delta(self) -> Fraction:
        """delta (0 for pure DP; PrivacyError for zCDP, which has no single delta)."""
        if isinstance(self.measure, ZCDP):
            raise PrivacyError("a zCDP statement has no single delta; use to_approx_dp(delta)")
        return self.measure.delta

    @property
    def rho(self) -> Optional[Fraction]:
        """rho for zCDP statements, else None."""
        return self.measure.rho if isinstance(self.measure, ZCDP) else None

    def _eps_or_raise(self) -> LogEpsilon:
        if self.epsilon is None:
            raise PrivacyError("a zCDP statement has no epsilon; use to_approx_dp(delta)")
        return self.epsilon

    def epsilon_float(self) -> Optional[float]:
        """eps as a float, for reports only (None for zCDP)."""
        return None if self.epsilon is None else self.epsilon.float_approx()  # report

    # -- conversions ----------------------------------------------------------------------------
    def under(self, relation: Relation, bits: int = conversions.DEFAULT_BITS) -> "PrivacyStatement":
        """The statement implied under ``relation`` (group privacy; RelationError when none follows)."""
        k = steps(self.relation, relation)
        if k == 1 and relation == self.relation:
            return self
        measure = conversions.group_privacy(self.measure, k, bits)
        if k == 2 and self.replacement_delta is not None and isinstance(measure, ApproxDP):
            measure = ApproxDP(measure.epsilon, self.replacement_delta)  # the mechanism's own, tighter proof
        how = "the same pairs" if k == 1 else f"group privacy over {k} steps"
        return PrivacyStatement(measure, relation, f"{self.theorem}; under [{relation.text()}] by {how}", self.notes)

    def to_zcdp(self, bits: int = conversions.DEFAULT_BITS) -> "PrivacyStatement":
        """Pure eps => eps^2/2-zCDP (Bun-Steinke 2016 Prop. 1.4); zCDP unchanged; approximate DP raises."""
        if isinstance(self.measure, ZCDP):
            return self
        if not self.pure:
            raise PrivacyError("approximate DP does not imply zCDP")
        pure = self.measure if isinstance(self.measure, PureDP) else PureDP(self.measure.epsilon)
        return PrivacyStatement(
            conversions.pure_to_zcdp(pure, bits), self.relation, f"{self.theorem}; eps-DP => eps^2/2-zCDP (BS16 Prop. 1.4)", self.notes
        )

    def to_approx_dp(self, delta: Any, method: str = "cks", bits: int = conversions.DEFAULT_BITS) -> "PrivacyStatement":
        """zCDP => (eps, delta)-DP by ``method`` "cks" (CKS20 Cor. 13) or "bun_steinke" (BS16 Prop. 1.3)."""
        if not isinstance(self.measure, ZCDP):
            raise PrivacyError("to_approx_dp converts zCDP statements; this one is already (eps, delta)")
        if method == "cks":
            measure = conversions.zcdp_to_approx_dp_cks(self.measure, delta, bits)
            how = "rho-zCDP => (eps, delta)-DP (CKS20 Cor. 13, certified upper bound)"
        elif method == "bun_steinke":
            measure = conversions.zcdp_to_approx_dp(self.measure, delta, bits)
            how = "rho-zCDP => (rho + 2 sqrt(rho ln(1/delta)), delta)-DP (BS16 Prop. 1.3, certified upper bound)"
        else:
            raise PrivacyError(f"unknown conversion method {method!r} (use 'cks' or 'bun_steinke')")
        return PrivacyStatement(measure, self.relation, f"{self.theorem}; {how}", self.notes)

    # -- description ----------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """JSON-ready exact form (round trip: :meth:`from_description`)."""
        return {
            "measure": self.measure.describe(),
            "relation": self.relation.describe(),
            "theorem": self.theorem,
            "notes": self.notes,
        }

    @classmethod
    def from_description(cls, obj: Any, where: str = "privacy") -> "PrivacyStatement":
        """Inverse of :meth:`describe`."""
        d = require_keys(obj, ("measure", "relation", "theorem", "notes"), where)
        if not isinstance(d["theorem"], str) or not isinstance(d["notes"], str):
            raise DescriptionError(f"{where}: theorem and notes must be strings")
        return cls(
            measure_from_description(d["measure"], f"{where}.measure"),
            relation_from_description(d["relation"], f"{where}.relation"),
            d["theorem"],
            d["notes"],
        )

    def text(self) -> str:
        """The statement in plain words."""
        return f"{self.measure.text()} under [{self.relation.text()}]. Theorem: {self.theorem}."


def _combine(statements: Iterable[PrivacyStatement], relation: Relation | None, bits: int,
             rule: Any, how: str) -> PrivacyStatement:
    """Convert every statement to ``relation`` (default: the first one's), then combine the measures by ``rule``."""
    sts = list(statements)
    if not sts:
        raise PrivacyError("composition of no statements")
    rel = sts[0].relation if relation is None else relation
    conv = [s.under(rel, bits) for s in sts]
    measure = rule([s.measure for s in conv], bits)
    return PrivacyStatement(measure, rel, how.format(k=len(conv)), "; ".join(s.theorem for s in conv))


def compose_statements(
    statements: Iterable[PrivacyStatement], relation: Relation | None = None, bits: int = conversions.DEFAULT_BITS
) -> PrivacyStatement:
    """Sequential composition, after converting every statement to ``relation`` (default: the first one's)."""
    return _combine(statements, relation, bits, composition.compose, "sequential composition of {k} steps")


def parallel_statements(
    statements: Iterable[PrivacyStatement], relation: Relation | None = None, bits: int = conversions.DEFAULT_BITS
) -> PrivacyStatement:
    """Parallel composition over disjoint batches of units (batch chosen by unit id, never by content)."""
    return _combine(statements, relation, bits, composition.parallel, "parallel composition over {k} disjoint batches")


def truncated_statement(statement: PrivacyStatement, bits: int = conversions.DEFAULT_BITS) -> PrivacyStatement:
    """The Unbounded guarantee of a mechanism run after keeping the n units with the smallest keyed hash.

    ``statement`` must hold under AddRemove(n); see
    :func:`dpspark.privacy.conversions.truncation_to_unbounded` (2-stable truncation).
    """
    if not isinstance(statement.relation, AddRemove):
        raise PrivacyError("truncation to n units needs a statement under AddRemove(n)")
    n = statement.relation.n
    return PrivacyStatement(
        conversions.truncation_to_unbounded(statement.measure, bits),
        Unbounded(),
        f"{statement.theorem}; keep the {n} units with the smallest keyed hash (2-stable), then 2-step group privacy",
        statement.notes,
    )
