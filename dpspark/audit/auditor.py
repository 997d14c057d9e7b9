"""Black-box neighbour-pair privacy auditor (floats: analysis only, never a released value).

Run a whole release pipeline ``run(dataset, rng) -> output`` many times on D
and on a neighbour D', count how often each event E happens, and bound
Pr[E | D] and Pr[E | D'] with one-sided Clopper-Pearson intervals. A claimed
(eps, delta)-DP pipeline satisfies, for every event E and both directions,

    Pr[E | A] <= e^eps Pr[E | B] + delta          ((A, B) = (D, D') and (D', D)).

The auditor **fails** the pipeline when, for some event and direction,

    lower(Pr[E | A]) - e^eps upper(Pr[E | B]) > delta

(for delta = 0 this is lower(Pr[E|A]) / upper(Pr[E|B]) > e^eps, i.e. the lower
confidence bound on the privacy loss exceeds the claimed eps).

False-alarm rate: each one-sided bound errs with probability <= alpha. There
are 4 bounds per event (lower and upper, on each side); if all hold, an honest
pipeline never fails (both directions use the same bounds). With
alpha = false_alarm / (4 * #events) (Bonferroni) an honest pipeline fails with
probability <= false_alarm overall, default 1e-6.

Randomness: real audits use :class:`dpspark.rng.SystemRandom` (the default);
tests may pass a :class:`dpspark.rng.SeededRandom` for reproducibility.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dpspark.audit.claims import Claim, check_neighbours
from dpspark.audit.clopper_pearson import cp_lower, cp_upper
from dpspark.audit.events import Event
from dpspark.rng import RandomSource, SystemRandom

Pipeline = Callable[[Any, RandomSource], Any]

#: default overall false-alarm rate of one audit (all events and both directions)
FALSE_ALARM = 1e-6


class PrivacyViolation(AssertionError):
    """Raised by :meth:`AuditVerdict.raise_if_failed`; carries the verdict."""

    def __init__(self, verdict: "AuditVerdict") -> None:
        self.verdict = verdict
        super().__init__(verdict.report())


@dataclass(frozen=True)
class Evidence:
    """The statistic of one event in one direction: A is the side whose probability is bounded below."""

    event: str
    direction: str
    hits_a: int
    runs_a: int
    hits_b: int
    runs_b: int
    p_a_lower: float
    p_b_upper: float
    hockey_stick_lower: float  # lower(Pr[E|A]) - e^eps upper(Pr[E|B]); a violation iff > delta
    epsilon_lower: float  # ln((lower(Pr[E|A]) - delta) / upper(Pr[E|B])), -inf when not positive
    violated: bool
    epsilon_point: float  # ln(hits_a/runs_a / (hits_b/runs_b)), the plain estimate (inf if hits_b = 0)

    def describe(self) -> str:
        """One line of evidence (analysis output)."""
        return (
            f"{self.event} [{self.direction}]: {self.hits_a}/{self.runs_a} vs {self.hits_b}/{self.runs_b}; "
            f"Pr_A >= {self.p_a_lower:.6g}, Pr_B <= {self.p_b_upper:.6g}; "  # report
            f"eps ~ {self.epsilon_point:.4g}, eps >= {self.epsilon_lower:.4g}, "  # report
            f"hockey-stick >= {self.hockey_stick_lower:.4g}"  # report
            + ("  VIOLATION" if self.violated else "")
        )


@dataclass(frozen=True)
class AuditVerdict:
    """Outcome of an audit: ``passed`` is False iff some event shows a loss above the claim."""

    passed: bool
    claim: Claim
    false_alarm: float
    alpha_per_bound: float
    runs_d: int
    runs_d_prime: int
    evidence: tuple[Evidence, ...]

    def worst(self) -> Evidence:
        """The most damning evidence: violations first, then the largest lower bound on eps."""
        return max(self.evidence, key=lambda e: (e.violated, e.epsilon_lower, e.hockey_stick_lower))

    def report(self) -> str:
        """Multi-line human-readable verdict with the evidence."""
        head = (
            f"audit {'PASSED' if self.passed else 'FAILED'}: claim eps = {self.claim.epsilon:.6g} "  # report
            f"(e^eps~ = {self.claim.exp_eps}), delta = {self.claim.delta}; "
            f"{self.runs_d} runs on D, {self.runs_d_prime} on D'; overall false-alarm rate <= {self.false_alarm:g} "
            f"(alpha = {self.alpha_per_bound:.3g} per one-sided bound)"
        )
        return "\n".join([head] + ["  " + e.describe() for e in self.evidence])

    def raise_if_failed(self) -> None:
        """Raise :class:`PrivacyViolation` (an AssertionError) with the evidence if the audit failed."""
        if not self.passed:
            raise PrivacyViolation(self)


def alpha_per_bound(false_alarm: float, events: int) -> float:
    """Bonferroni: 4 one-sided bounds per event (lower and upper on D and on D')."""
    if not 0 < false_alarm < 1 or events < 1:
        raise ValueError("need 0 < false_alarm < 1 and at least one event")
    return false_alarm / (4 * events)


def sample_event_counts(run: Pipeline, dataset: Any, events: Sequence[Event], runs: int, rng: RandomSource) -> list[int]:
    """How many of ``runs`` independent runs of ``run(dataset, rng)`` fall in each event."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError("runs must be an int >= 1")
    hits = [0] * len(events)
    for _ in range(runs):
        out = run(dataset, rng)
        for i, event in enumerate(events):
            if event(out):
                hits[i] += 1
    return hits


def _direction(name: str, label: str, ka: int, na: int, kb: int, nb: int, claim: Claim, alpha: float) -> Evidence:
    lo = cp_lower(ka, na, alpha)
    hi = cp_upper(kb, nb, alpha)
    delta = float(claim.delta)  # report
    hockey = lo - claim.e_epsilon * hi
    eps_lower = math.log((lo - delta) / hi) if lo > delta else float("-inf")  # report
    if ka == 0:
        point = float("-inf")  # report: audit statistic
    elif kb == 0:
        point = float("inf")  # report: audit statistic
    else:
        point = math.log(ka / na) - math.log(kb / nb)  # report
    return Evidence(name, label, ka, na, kb, nb, lo, hi, hockey, eps_lower, hockey > delta, point)


def evaluate_counts(
    event_names: Sequence[str],
    hits_d: Sequence[int],
    runs_d: int,
    hits_d_prime: Sequence[int],
    runs_d_prime: int,
    claim: Claim,
    *,
    false_alarm: float = FALSE_ALARM,
) -> AuditVerdict:
    """The verdict from event counts gathered elsewhere (e.g. runs of a Spark job), both directions."""
    if not len(event_names) == len(hits_d) == len(hits_d_prime):
        raise ValueError("one hit count per event on each side")
    alpha = alpha_per_bound(false_alarm, len(event_names))
    evidence: list[Evidence] = []
    for name, k1, k2 in zip(event_names, hits_d, hits_d_prime):
        evidence.append(_direction(name, "D vs D'", k1, runs_d, k2, runs_d_prime, claim, alpha))
        evidence.append(_direction(name, "D' vs D", k2, runs_d_prime, k1, runs_d, claim, alpha))
    return AuditVerdict(
        passed=not any(e.violated for e in evidence),
        claim=claim,
        false_alarm=false_alarm,
        alpha_per_bound=alpha,
        runs_d=runs_d,
        runs_d_prime=runs_d_prime,
        evidence=tuple(evidence),
    )


def audit(
    run: Pipeline,
    d: Any,
    d_prime: Any,
    events: Sequence[Event],
    claim: Claim,
    *,
    runs: int,
    runs_d_prime: int | None = None,
    rng: RandomSource | None = None,
    false_alarm: float = FALSE_ALARM,
    relation: str | None = "add/remove",
) -> AuditVerdict:
    """Audit ``run`` on the neighbours D, D' against ``claim`` over ``events``.

    ``relation`` ("add/remove", "replacement", or None to skip the check) is
    checked on count/mapping datasets; for "replacement" pass the replacement
    claim (e.g. ``claim.for_replacement()``). ``rng`` defaults to a fresh
    :class:`SystemRandom` (CSPRNG). Returns the verdict; it fails iff some
    event's lower confidence bound on the loss exceeds the claim, with overall
    false-alarm probability <= ``false_alarm`` for an honest pipeline.
    """
    if not events:
        raise ValueError("give at least one event")
    if relation is not None:
        check_neighbours(d, d_prime, relation)
    source = rng if rng is not None else SystemRandom()
    n_prime = runs if runs_d_prime is None else runs_d_prime
    hits_d = sample_event_counts(run, d, events, runs, source)
    hits_dp = sample_event_counts(run, d_prime, events, n_prime, source)
    return evaluate_counts([e.name for e in events], hits_d, runs, hits_dp, n_prime, claim, false_alarm=false_alarm)
