"""The stated sample size of the Gaussian releases: what is derived for the current algorithm, and what is not.

The releases now run on every single, centred on a private mean, with ball clipping at per-row tails
(ROW_BETA_COVARIANCE, ROW_BETA_MEAN of :mod:`~dpspark.mechanisms.gaussian_model.covariance`) and
CoinPress-style whitening rounds whose spectral allowance is the TYPICAL error of a pass, not a w.h.p.
bound (:func:`~dpspark.mechanisms.gaussian_model.covariance.spectral_allowance`). The previous tail-bound
derivation (pairs of keyed buckets, a no-row-fails union bound, KVMean) does not apply to it, and no
replacement derivation is stated yet: :func:`release_sample_size` returns None, so a release states no
model-error claim with a minimum n (only the certified noise bound of its last pass), and the plan says so.
Accuracy is measured instead: ``scripts/bench/gaussian_vs_coinpress.py`` (issue 23 §1).

Privacy never depended on this module: every sensitivity is the exact clip of its pass.
"""

from __future__ import annotations

from fractions import Fraction

#: the release kinds (gaussian_mean_known is gaussian_mean with a public covariance)
KINDS = ("gaussian_covariance", "gaussian_mean", "gaussian_mean_known", "gaussian_learner")
#: what the plan and the release say in place of N
NOT_DERIVED = ("no tail-bound sample size is derived for this algorithm (per-row clipping with a stated tail, "
               "typical whitening allowances); its accuracy is measured by scripts/bench/gaussian_vs_coinpress.py")


def tested_beta(beta: Fraction, events: int = 1) -> Fraction:
    """beta / (4 events), exact: the failure share the plan reports for its tail events."""
    return Fraction(beta) / (4 * max(1, events))


def release_events(kind: str) -> int:
    """The number of tail events a release kind reports (one per clipped estimate: covariance, mean)."""
    if kind not in KINDS:
        raise ValueError(f"unknown release kind {kind!r} (known: {KINDS})")
    return 2 if kind in ("gaussian_mean", "gaussian_learner") else 1


def release_sample_size(kind: str, *args: object, **kwargs: object) -> int | None:
    """N for a release kind: None for every kind of the current algorithm (module docstring)."""
    release_events(kind)
    return None
