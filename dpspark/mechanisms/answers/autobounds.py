"""Bounds chosen privately for an ``answers`` release (issue 32 §2; the mechanism is :mod:`dpspark.bounds`).

A sum or mean given without ``lo``/``hi`` has them (and ``scale_bits``) chosen on a stated share s of epsilon
(``privacy.bounds_share``, default 1/10), **charged with the rest before any data is read**. The release's
statement is the sequential composition of

* the bounds step: per auto-bounded query j (m of them), one noisy bit-length histogram of the **units'
  totals** (:mod:`dpspark.mechanisms.answers.bounds_pass`: each unit in one cell, so l1 sensitivity 1),
  :class:`dpspark.bounds.BoundsLaw` at eps s/m, Delta = 1, each cell's count clamped to [0, max_units] first
  (1-Lipschitz, so the sensitivity stays 1; answers remove no unit, so a count may pass max_units). Each is
  stated as PureDP(eps s / m), an upper bound of its eps_b; and
* the answers, calibrated within the rest: bounded noise on ((1 - s) eps, delta); the Gaussian on
  rho* - (s eps)^2 / 2, rho* the largest rho whose certified conversion is <= (eps, delta) (pure eps-DP is
  eps^2/2-zCDP, Bun-Steinke 2016 Prop. 1.4), so the composed zCDP statement still converts within (eps, delta).

The answers' noise law is calibrated for sensitivity 1 per scalar whatever the bounds (each scalar on its own
grid of step Delta_j), so nothing is calibrated after the spend. After the draw (post-processing of the noisy
histograms): the narrowest range of cells (``BoundsLaw.choose``), clamped to [-2^40, 2^40] with width >= 1 (the
pre-pass reads totals within +-2^39; this keeps every chosen Delta_j <= 2^50: inside the Arrow kernel's 2^52,
MAX_DELTA and, with max_units < 2^76 checked before the spend, decimal(38,0)), then ``choose_scale_bits``. No
step after the spend can fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpspark.bounds import BoundsChoice, BoundsLaw, choose_scale_bits
from dpspark.bounds.histogram import DEFAULT_SHARE
from dpspark.mechanisms.answers.queries import Query

if TYPE_CHECKING:
    from dpspark.rng import RandomSource

#: the chosen bounds lie in [-CLAMP, CLAMP] (module docstring)
CLAMP = Fraction(1 << 40)
#: the most units an auto-bounded release takes: max_units x 2^51 < 10^38 (decimal(38,0) sums)
MAX_UNITS = 1 << 76


def parse_share(raw: Any) -> Fraction:
    """``privacy.bounds_share``: an exact fraction in (0, 1/2] (a float is refused with a TypeError)."""
    from dpspark.exact import parse_rational
    from dpspark.mechanisms.base import MechanismSpecError

    if isinstance(raw, float):
        raise TypeError(f"privacy.bounds_share was given as a float ({raw!r}); floats are not exact. Write it as a "
                        f"string such as \"{raw}\"")
    share = parse_rational(raw, "privacy.bounds_share")
    if not 0 < share <= Fraction(1, 2):
        raise MechanismSpecError("privacy.bounds_share must lie in (0, 1/2]")
    return share


@dataclass
class AnswerBounds:
    """The bounds step of one answers release: its share, per-query laws and, after the run, the choices."""

    share: Fraction
    epsilon: Fraction
    names: tuple[str, ...]
    law: BoundsLaw
    beta: Fraction
    max_units: int
    choices: dict[str, BoundsChoice] = field(default_factory=dict)
    clamped: dict[str, bool] = field(default_factory=dict)

    @property
    def each(self) -> Fraction:
        """Each auto-bounded query's epsilon (the m histograms compose sequentially)."""
        return self.epsilon * self.share / len(self.names)

    def statements(self) -> list[Any]:
        """The bounds step's statements, each PureDP(eps s / m) under AddRemove(max_units)."""
        from dpspark.privacy import AddRemove, PrivacyStatement, PureDP

        return [PrivacyStatement(PureDP(self.each), AddRemove(self.max_units),
                                 f"bounds of query {n!r}: FastSample bit-length histogram of the units' totals, l1 "
                                 "sensitivity 1 (dpspark.mechanisms.answers.autobounds)") for n in self.names]

    def describe(self) -> dict[str, Any]:
        """The manifest's ``bounds`` entry: share, epsilon, method and (after the run) the choices."""
        out: dict[str, Any] = {"chosen": "privately", "share": str(self.share), "epsilon_each": str(self.each),
                               "method": "noisy histogram of the units' totals in signed bit-length cells, narrowest "
                                         f"range leaving <= {self.law.tail} of the noisy mass outside on each side",
                               "law": self.law.describe(), "queries": {}}
        for n in self.names:
            row: dict[str, Any] = {}
            if n in self.choices:
                row.update(self.choices[n].describe())
                row["units_clipped_at_most"] = row.pop("rows_clipped_at_most")  # a unit's total is what is clipped
                row["noisy_units"] = row.pop("noisy_rows")
                row["clamped_to_2^40"] = self.clamped[n]
            out["queries"][n] = row
        return out

    def resolve(self, queries: tuple[Query, ...], hists: list[list[int]], rng: "RandomSource") -> tuple[Query, ...]:
        """The noisy histograms (in query order), the choices, and the queries with their bounds (post-processing)."""
        for name, hist in zip(self.names, hists):  # fixed draw order: the auto-bounded queries in order
            counts = [min(max(int(c), 0), self.max_units) for c in hist]  # 1-Lipschitz per cell
            self.choices[name] = self.law.choose(self.law.draw(counts, rng), self.beta)
        out = []
        for q in queries:
            if not q.auto:
                out.append(q)
                continue
            ch = self.choices[q.name]
            lo = min(max(ch.lo, -CLAMP), CLAMP - 1)
            hi = max(min(ch.hi, CLAMP), lo + 1)
            self.clamped[q.name] = (lo, hi) != (ch.lo, ch.hi)
            bits = choose_scale_bits(lo, hi, self.epsilon)
            out.append(replace(q, lo=lo, hi=hi, scale_bits=bits, auto=False))
        return tuple(out)


def answer_bounds(queries: tuple[Query, ...], share: Fraction | None, spec: Any) -> AnswerBounds | None:
    """The bounds step of a release, or None when every query has its bounds (data-free, before any read)."""
    from dpspark.bounds.histogram import BoundsError
    from dpspark.errors import ParameterError
    from dpspark.mechanisms.base import MechanismSpecError
    from dpspark.rng import DEFAULT_LAMBDA

    names = tuple(q.name for q in queries if q.auto)
    if not names:
        if share is not None:
            raise MechanismSpecError("privacy.bounds_share applies only when a sum or mean has no lo/hi (bounds "
                                     "chosen privately); remove it")
        return None
    if spec.max_units >= MAX_UNITS:
        raise MechanismSpecError("bounds chosen privately need max_units < 2^76 (the chosen bounds' exact sums); "
                                 "give lo and hi")
    s = DEFAULT_SHARE if share is None else share
    epsilon = Fraction(spec.epsilon)
    each = epsilon * s / len(names)
    try:
        law = BoundsLaw(each, 1, spec.max_units, DEFAULT_LAMBDA)
    except (BoundsError, ParameterError) as err:
        raise MechanismSpecError(f"bounds chosen privately (each query's share {each} of epsilon): {err}; raise "
                                 "privacy.bounds_share or epsilon, or give lo and hi") from None
    return AnswerBounds(s, epsilon, names, law, Fraction(spec.beta), spec.max_units)
