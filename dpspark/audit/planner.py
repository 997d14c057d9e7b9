"""Sample-size planner for the auditor (floats: analysis only).

Question: a pipeline claims e^eps (and delta) but its true probabilities of an
event E are p_d under D and p_dprime under D' (true loss ln(p_d / p_dprime)).
How many runs N per side make :func:`dpspark.audit.audit` fail it with
probability >= 1 - ``miss``, at overall false-alarm rate ``false_alarm``?

The guarantee is rigorous, not a normal approximation. From exact binomial
tails (regularised incomplete beta, float precision):

* with probability >= 1 - miss/2, hits under D are >= k_lo(N);
* with probability >= 1 - miss/2, hits under D' are <= k_hi(N);

and the Clopper-Pearson lower bound is increasing in k, the upper bound too, so
if lower(k_lo) - e^eps upper(k_hi) > delta at the Bonferroni alpha, the audit
fails the pipeline with probability >= 1 - miss. The planner returns the
smallest such N (doubling, then bisection over N).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpspark.audit.auditor import FALSE_ALARM, alpha_per_bound
from dpspark.audit.clopper_pearson import betainc, cp_lower, cp_upper


@dataclass(frozen=True)
class SamplePlan:
    """The planned number of runs per side and the inputs it was planned for (analysis output)."""

    runs_per_side: int
    p_d: float
    p_dprime: float
    claimed_e_epsilon: float
    delta: float
    false_alarm: float
    miss: float
    events: int

    @property
    def true_loss(self) -> float:
        """ln(p_d / p_dprime): the mutant's privacy loss on the event."""
        return math.log(self.p_d / self.p_dprime) if self.p_dprime > 0 else math.inf  # report

    def describe(self) -> str:
        """One line for reports."""
        return (
            f"{self.runs_per_side} runs per side: Pr[E|D] = {self.p_d:.6g}, Pr[E|D'] = {self.p_dprime:.6g} "  # report
            f"(true loss {self.true_loss:.4g} vs claimed {math.log(self.claimed_e_epsilon):.4g}, delta {self.delta:g}); "  # report
            f"power >= 1 - {self.miss:g} at false-alarm <= {self.false_alarm:g} over {self.events} event(s)"
        )


def binomial_tail_below(k: int, runs: int, p: float) -> float:
    """Pr[Bin(runs, p) < k] = I_{1-p}(runs-k+1, k) for 1 <= k <= runs (0 for k <= 0)."""
    if k <= 0:
        return 0.0
    if k > runs:
        return 1.0
    return betainc(runs - k + 1, k, 1.0 - p)


def binomial_tail_above(k: int, runs: int, p: float) -> float:
    """Pr[Bin(runs, p) > k] = I_p(k+1, runs-k) for 0 <= k < runs (0 for k >= runs)."""
    if k >= runs:
        return 0.0
    if k < 0:
        return 1.0
    return betainc(k + 1, runs - k, p)


def guaranteed_hits(runs: int, p: float, miss_half: float) -> tuple[int, int]:
    """(k_lo, k_hi): the largest k_lo with Pr[Bin < k_lo] <= miss_half, the smallest k_hi with Pr[Bin > k_hi] <= miss_half."""
    lo, hi = 0, runs  # Pr[Bin < 0] = 0 <= miss_half: lo is always feasible
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if binomial_tail_below(mid, runs, p) <= miss_half:
            lo = mid
        else:
            hi = mid - 1
    k_lo = lo
    lo, hi = 0, runs  # Pr[Bin > runs] = 0: hi is always feasible
    while lo < hi:
        mid = (lo + hi) // 2
        if binomial_tail_above(mid, runs, p) <= miss_half:
            hi = mid
        else:
            lo = mid + 1
    return k_lo, lo


def detects(runs: int, p_d: float, p_dprime: float, e_eps: float, delta: float, alpha: float, miss: float) -> bool:
    """True iff at ``runs`` per side the audit fails the pipeline with probability >= 1 - miss."""
    k_lo, _ = guaranteed_hits(runs, p_d, miss / 2)
    _, k_hi = guaranteed_hits(runs, p_dprime, miss / 2)
    if k_lo == 0 or k_hi >= runs:
        return False
    return cp_lower(k_lo, runs, alpha) - e_eps * cp_upper(k_hi, runs, alpha) > delta


def plan_runs(
    claimed_exp_eps: Fraction | float,
    p_d: float,
    p_dprime: float,
    *,
    delta: Fraction | float = 0,
    false_alarm: float = FALSE_ALARM,
    miss: float = 1e-6,
    events: int = 1,
    max_runs: int = 10**9,
) -> SamplePlan:
    """Smallest N per side detecting Pr[E|D] = p_d vs Pr[E|D'] = p_dprime against the claim (see module doc).

    ``events`` is the number of events the audit will test (it sets the Bonferroni alpha).
    Raises ValueError if the probabilities do not violate the claim or max_runs does not suffice.
    """
    e_eps = float(claimed_exp_eps)  # report
    dl = float(delta)  # report
    if not (0 <= p_dprime < 1 and 0 < p_d <= 1):
        raise ValueError("need 0 <= p_dprime < 1 and 0 < p_d <= 1")
    if p_d - e_eps * p_dprime <= dl:
        raise ValueError("these probabilities satisfy the claim: no sample size detects them")
    alpha = alpha_per_bound(false_alarm, events)
    hi = 16
    while not detects(hi, p_d, p_dprime, e_eps, dl, alpha, miss):
        hi *= 2
        if hi > max_runs:
            raise ValueError(f"more than max_runs = {max_runs} runs per side would be needed")
    lo = hi // 2
    while hi - lo > max(1, hi // 1000):  # 0.1% resolution is plenty for a plan
        mid = (lo + hi) // 2
        if detects(mid, p_d, p_dprime, e_eps, dl, alpha, miss):
            hi = mid
        else:
            lo = mid
    return SamplePlan(hi, p_d, p_dprime, e_eps, dl, false_alarm, miss, events)


def plan_for_loss(
    claimed_exp_eps: Fraction | float,
    true_loss: float,
    p_dprime: float,
    **kwargs: float | int | Fraction,
) -> SamplePlan:
    """Plan for a mutant whose loss on the event is ``true_loss`` (so p_d = p_dprime e^true_loss)."""
    return plan_runs(claimed_exp_eps, p_dprime * math.exp(true_loss), p_dprime, **kwargs)  # type: ignore[arg-type]  # report
