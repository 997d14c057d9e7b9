"""How many rows each pass clipped: a noisy count per pass, and the warning a user needs (issue 36 §2).

Every pass over the singles ball-clips them: the mean steps (:mod:`.mean`) at a radius >= g, g^2 =
tail_sq(d, 1/100), around a private centre, and the covariance passes as follows. A covariance pass
ball-clips every single y = A (x - mu~) at ||y||^2 <= T, T >= tau = tail_sq(d, 1/20) (:mod:`.covariance`). For Gaussian rows with A Sigma A^T <= I (the public A_0 = I / sqrt(kappa) and, on the
preconditioning rounds' allowance, every later A) and the centre's error within the widening of T,
||y||^2 > T implies ||A (x - mu)||^2 > tau, and ||A (x - mu)||^2 is at most a chi^2_d variable: a Gaussian row is
clipped w.p. <= r = Pr[chi^2_d > tau] (about 0.2% at d = 3; the 1/20 is Laurent-Massart's looser bound). A
skewed or heavy-tailed column is clipped far more often, and its clipped rows pull its variance down - silently,
before this.

The same argument gives a mean step's rate r = Pr[chi^2_d > g^2] (its radius adds a bound on the centre's
offset to g).

Release. Each pass (covariance and mean) also releases C, the number of singles it clipped, plus a discrete Gaussian
(:func:`~.model_noise.plan_noise` at l2 sensitivity 1: adding or removing a unit adds or removes at most one
single, which is clipped or not), at CLIP_SHARE of the pass's rho (the pass's matrix or sums get the rest, so the pass
still costs its rho; Bun-Steinke composition). Exact checks: tests/unit/gaussian_model/test_gaussian_clipping.py.

Warning (post-processing of released values; floats allowed). Given N singles of Gaussian rows, C is dominated
by Binomial(N, r), so C <= N r + sqrt(2 N r L) + 2L/3 except w.p. e^-L (Bernstein, L = ln 10^8), with
N <= N~ + its noise bound; each noise draw is within sigma sqrt(2 ln(2 10^8)) except w.p. 10^-8.
:func:`clip_summary` flags a pass whose noisy C~ exceeds that level: a false alarm on Gaussian rows w.p.
<= 3 10^-8 per pass (when the preconditioner and the centre meet their allowances).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

from dpspark.mechanisms.gaussian_model.budget import CLIP_SHARE  # noqa: F401 - the share, stated with its use
from dpspark.mechanisms.gaussian_model.covariance import ROW_BETA_COVARIANCE, ROW_BETA_MEAN, tail_sq

#: false-alarm rate of each term of the warning's level
WARN_FALSE_ALARM = 1e-8  # report


def chi2_sf(d: int, x: float) -> float:
    """Pr[chi^2_d > x] (closed forms of the regularised upper gamma Q(d/2, x/2) at integer d; a float for a warning)."""
    h = x / 2.0  # report
    if d % 2 == 0:
        term, total = 1.0, 1.0  # report
        for k in range(1, d // 2):  # public: d/2 terms
            term *= h / k  # report
            total += term  # report
        return math.exp(-h) * total  # report
    total = math.erfc(math.sqrt(h))  # report
    term = math.sqrt(h) / math.gamma(1.5)  # report: k = 0
    for k in range((d - 1) // 2):  # public: (d - 1)/2 terms
        total += math.exp(-h) * term  # report
        term *= h / (k + 1.5)  # report
    return total  # report


def gaussian_clip_rate(d: int, mean_step: bool = False) -> float:
    """r = Pr[chi^2_d > tail_sq(d, 1/20)]: the most a covariance pass clips Gaussian rows, per row (module
    docstring); a mean step's ball has radius >= g, g^2 = tail_sq(d, 1/100): r = Pr[chi^2_d > g^2]."""
    return chi2_sf(d, float(tail_sq(d, ROW_BETA_MEAN if mean_step else ROW_BETA_COVARIANCE)))  # report


def noise_bound(sigma: float) -> float:
    """sigma sqrt(2 ln(2 / 1e-8)): a discrete Gaussian draw exceeds it w.p. <= 1e-8 (sigma-subgaussian, CKS20)."""
    return sigma * math.sqrt(2.0 * math.log(2.0 / WARN_FALSE_ALARM))  # report


def gaussian_clip_level(n_upper: float, rate: float) -> float:
    """The most Gaussian rows a pass clips among <= n_upper singles, except w.p. 1e-8 (Bernstein)."""
    L = math.log(1.0 / WARN_FALSE_ALARM)  # report
    mean = n_upper * rate  # report
    return mean + math.sqrt(2.0 * mean * L) + 2.0 * L / 3.0  # report


def clip_summary(pass_log: Sequence[dict[str, Any]], d: int, noisy_singles: int,
                 singles_sigma: float) -> list[dict[str, Any]]:
    """Per pass with a clipped count: its label, the noisy clipped rows, and whether they are above
    what Gaussian rows would give (module docstring). Post-processing of released values only."""
    n_up = noisy_singles + noise_bound(singles_sigma)  # report
    out = []
    for p in pass_log:
        if "clipped" not in p:
            continue
        rate = gaussian_clip_rate(d, mean_step="radius_sq" in p)  # report
        clipped = max(0, int(p["clipped"]))
        level = gaussian_clip_level(n_up, rate) + noise_bound(float(Fraction(p["clipped_sigma"])))  # report
        out.append({"pass": p["pass"], "clipped": clipped, "share": clipped / max(noisy_singles, 1),  # report
                    "rate": rate, "above_gaussian": clipped > level})
    return out


def clip_warning(summary: Sequence[dict[str, Any]], columns: Sequence[str], d: int) -> str:
    """The warning text (empty when no pass clipped more than Gaussian rows would): what happened and what to do."""
    bad = [s for s in summary if s["above_gaussian"]]
    if not bad:
        return ""
    worst = max(bad, key=lambda s: s["share"])  # report
    return (f"WARNING: the pass '{worst['pass']}' clipped about {worst['share']:.1%} of the rows "  # report
            f"(noisy count), where Gaussian rows are clipped at most {worst['rate']:.2%} of the time: some of "  # report
            f"{', '.join(columns)} are far from Gaussian (skewed or heavy-tailed), and the clipped rows bias the "
            "covariance low (the variance of a skewed column most, and its covariances) and pull the mean towards "
            "the bulk. Transform such a column "
            "before the release (e.g. the log of a positive, right-skewed one such as income) and model the "
            "transformed column; raising gaussian.kappa does not help (the passes fit their clip to the data's own "
            "spread)")
