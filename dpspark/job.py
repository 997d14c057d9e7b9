"""The release job: config -> Spark sparse counts -> exact driver-side mechanism -> release directory.

One code path serves ``spark-submit jobs/release_histogram.py --config X`` and
``dpspark release --config X`` (embedded local Spark). Order of operations:

1. the config is validated completely, and the output path checked, before
   Spark starts;
2. Spark computes sparse counts per universe index (contribution bounded);
3. the counts reach the driver as Arrow; curator-side checks (more units than
   the declared n) fail here, before any noise is drawn;
4. noise is drawn once, on the driver, from the CSPRNG: a retried Spark task
   can never produce a second, different noisy answer;
5. the release is written atomically.

Progress lines name stages and elapsed time only: never a count, a number of
distinct keys, or which branch a mechanism took.

``mechanism = "compact"`` (CompactHistogram, :mod:`dpspark.compact`) releases
a polynomial with l = n + 1 coefficients over GF(2^m) instead of bins; its
public plan (:func:`dpspark.compact.plan.plan_compact`) was already checked
by the config, and the release is written by
:func:`dpspark.release.compact.write_compact_release`.
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Union

from dpspark.config import ReleaseConfig
from dpspark.counting import FastSample, GeoSample, choose_exp_eps
from dpspark.counting.base import CountingMechanism
from dpspark.errors import DPSparkError
from dpspark.exact import exp_lower_bound
from dpspark.histogram import HistogramRelease, basic_histogram, pure_sparse_histogram, stability_histogram
from dpspark.histogram.stability import stability_mechanism
from dpspark.histogram.timing import pad_until
from dpspark.rng import RandomSource, default_source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dpspark.compact import CompactRelease
    from dpspark.compact.plan import CompactPlan

Progress = Callable[[str], None]


class CuratorError(DPSparkError, ValueError):
    """The data breaks a declared public bound (e.g. more units than max_units). Raised before any noise."""


def stderr_progress(prefix: str = "dpspark") -> Progress:
    """A progress printer with elapsed time, to stderr."""
    start = time.monotonic()

    def show(msg: str) -> None:
        print(f"[{prefix} {time.monotonic() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    return show


def within_epsilon(exp_eps: Fraction, extra: Fraction, epsilon: Fraction) -> bool:
    """Certified check that ln(exp_eps) + extra <= epsilon (uses e^(eps-extra) >= L(eps)(1-extra))."""
    return exp_eps <= exp_lower_bound(epsilon) * (1 - extra)


def release_exp_eps(epsilon: Fraction) -> Fraction:
    """e^{eps~} = p/q for a release at epsilon under add/remove: eps~ just below epsilon (one count moves by 1)."""
    return choose_exp_eps(2 * epsilon)


def gamma_for(beta: Fraction, universe_size: int) -> Fraction:
    """FastSample's uniform weight 1/g, g a power of two >= 6|X|/beta: simultaneous accuracy over X stays valid."""
    need = -(-6 * universe_size * beta.denominator // beta.numerator)
    return Fraction(1, 1 << (need - 1).bit_length())


def compact_plan(cfg: ReleaseConfig, lam: int | None = None) -> "CompactPlan":
    """The public plan (M, m, G, l) of a compact release config."""
    from dpspark.compact.plan import plan_compact
    from dpspark.rng import DEFAULT_LAMBDA

    return plan_compact(
        cfg.max_units, cfg.universe.size, cfg.epsilon, cfg.beta, gamma=cfg.gamma, m=cfg.field_degree,
        sampler=cfg.sampler, lam=DEFAULT_LAMBDA if lam is None else lam,
    )


def count_mechanism(cfg: ReleaseConfig) -> CountingMechanism:
    """The counting mechanism a release config asks for (exact parameters, public inputs only)."""
    n = cfg.max_units
    if cfg.mechanism == "compact":
        return compact_plan(cfg).mechanism
    if cfg.mechanism == "stability":
        return stability_mechanism(n, cfg.epsilon, cfg.delta)
    exp_eps = release_exp_eps(cfg.epsilon)
    gamma = cfg.gamma if cfg.gamma is not None else gamma_for(cfg.beta, cfg.universe.size)
    if gamma.numerator != 1:
        gamma = Fraction(1, -(-gamma.denominator // gamma.numerator))  # round down to 1/g, stated in the manifest
    mech = FastSample(n=n, exp_eps=exp_eps, gamma=gamma)
    return mech.fallback if mech.fallback is not None else mech


def run_compact(
    cfg: ReleaseConfig, indices: list[int], counts: list[int], rng: RandomSource, progress: Progress
) -> "CompactRelease":
    """Draw a compact release on the driver from exact sparse counts (0-based indexes); noise is drawn once."""
    from dpspark.compact import compact_histogram

    plan = compact_plan(cfg, rng.lam)
    release = compact_histogram(
        (indices, counts), cfg.universe.size, cfg.max_units, plan.mechanism, rng,
        epsilon2=plan.epsilon2, beta=cfg.beta, m=plan.m, sampler=plan.sampler.kind, progress=progress,
    )
    if release.ell != cfg.max_units + 1:
        raise RuntimeError("internal error: a compact release must have l = n + 1 coefficients")
    if not within_epsilon(release.privacy.exp_eps, release.privacy.bias_epsilon, cfg.epsilon):
        raise RuntimeError("internal error: the release's exact epsilon exceeds the configured epsilon")
    return release


def run_mechanism(
    cfg: ReleaseConfig, indices: list[int], counts: list[int], rng: RandomSource, progress: Progress
) -> HistogramRelease:
    """Draw the release on the driver from exact sparse counts (0-based indexes)."""
    mech = count_mechanism(cfg)
    data = (indices, counts)
    size = cfg.universe.size
    n = cfg.max_units
    if cfg.mechanism == "stability":
        # leave room for the rng's (1 + 2^-lam)-factor on delta so the stated delta stays <= the requested one
        assert cfg.delta is not None
        threshold_delta = cfg.delta * (1 - Fraction(1, 1 << 100))
        release = stability_histogram(data, size, n, mech, threshold_delta, rng, beta=cfg.beta)
    elif cfg.mechanism == "pure_sparse":
        mixing = Fraction(1, -(-3 * cfg.beta.denominator // cfg.beta.numerator))  # gamma = beta/3, as 1/g
        release = pure_sparse_histogram(data, size, n, mech, mixing, rng, beta=cfg.beta, progress=progress)
    elif cfg.mechanism == "dense":
        release = basic_histogram(data, range(size), size, n, mech, rng, beta=cfg.beta)
    else:  # pragma: no cover - config validation rejects it
        raise ValueError(f"mechanism {cfg.mechanism!r} is not available")
    if not within_epsilon(release.privacy.exp_eps, release.privacy.bias_epsilon, cfg.epsilon):
        raise RuntimeError("internal error: the release's exact epsilon exceeds the configured epsilon")
    if release.privacy.delta > (cfg.delta or 0):
        raise RuntimeError("internal error: the release's exact delta exceeds the configured delta")
    return release


def spend_budget(cfg: ReleaseConfig) -> Any:
    """Commit the release's (epsilon, delta) to the ledger before any data is read; None without [budget]."""
    if cfg.budget is None:
        return None
    from dpspark.ledger import Ledger

    ledger = Ledger(cfg.budget.ledger)
    if cfg.budget.total_epsilon is not None:
        ledger.set_total(cfg.budget.dataset, cfg.budget.total_epsilon, cfg.budget.total_delta)
    # The configured epsilon bounds the exact one (checked by run_mechanism): ln(p/q) + bias <= epsilon.
    record = ledger.spend(cfg.budget.dataset, cfg.epsilon, cfg.delta or 0, cfg.mechanism, str(cfg.output))
    return ledger, record


def job_spark_conf(cfg: ReleaseConfig) -> dict[str, str]:
    """Spark settings of the embedded session: console progress on, then the config's [spark] table."""
    return {"spark.ui.showConsoleProgress": "true", **cfg.spark_conf}


def run_release(
    cfg: ReleaseConfig,
    *,
    spark: "SparkSession | None" = None,
    rng: RandomSource | None = None,
    progress: Progress | None = None,
) -> Path:
    """Run a whole release; returns the path of the published release directory."""
    from dpspark.release import check_output_path

    show = progress or stderr_progress()
    rng = rng or default_source()
    cfg.output.parent.mkdir(parents=True, exist_ok=True)
    check_output_path(cfg.output)  # before any noise: a published release is never overwritten
    spent = spend_budget(cfg)  # committed before any data is read or noise drawn; never refunded
    try:
        out = _run_spark_and_mechanism(cfg, spark, rng, show)
    except BaseException:
        if spent is not None:
            spent[0].mark_failed(spent[1].id)
        raise
    if spent is not None:
        spent[0].mark_released(spent[1].id)
    return out


def _run_spark_and_mechanism(cfg: ReleaseConfig, spark: "SparkSession | None", rng: RandomSource, show: Progress) -> Path:
    from dpspark.spark.counts import collect_counts, counts_to_python, read_input, sparse_counts

    if spark is None:
        from dpspark.spark.session import local_session

        show("starting local Spark")
        spark = local_session("dpspark-release", "local[*]", conf=job_spark_conf(cfg))
    show("reading input and counting keys on Spark")
    df = read_input(spark, cfg.input)
    table = collect_counts(sparse_counts(df, cfg, rng))
    show("counts collected on the driver")
    indices, counts = counts_to_python(table)
    del table
    if sum(counts) > cfg.max_units:
        raise CuratorError(
            f"the input holds more {'units' if cfg.unit_column else 'rows'} than privacy.max_units = {cfg.max_units} "
            "(curator-side check, before any noise was drawn); raise max_units or bound the input"
        )
    show(f"drawing noise on the driver ({cfg.mechanism})")
    started = time.monotonic()
    release: Union[HistogramRelease, "CompactRelease"]
    if cfg.mechanism == "compact":
        release = run_compact(cfg, indices, counts, rng, show)
    else:
        release = run_mechanism(cfg, indices, counts, rng, show)
    del indices, counts
    if cfg.pad_seconds is not None:  # docs/balcer-vadhan-notes.md §E10: the noise step's duration must not reveal |S| or the draws
        pad_until(started, float(cfg.pad_seconds))  # report: decides only when to return
    show("writing the release atomically")
    out = write_release(cfg, release, rng.name)
    show(f"release written: {out}")
    return out


def write_release(cfg: ReleaseConfig, release: Union[HistogramRelease, "CompactRelease"], rng_name: str) -> Path:
    """Write a sparse or compact release for ``cfg`` atomically."""
    common: dict[str, Any] = {
        "universe": cfg.universe,
        "key_columns": list(cfg.key_columns),
        "config": cfg.exact_parameters(),
        "input_description": cfg.input.describe(),
        "rng_name": rng_name,
    }
    if isinstance(release, HistogramRelease):
        from dpspark.release.sparse import write_sparse_release

        return write_sparse_release(cfg.output, release=release, **common)
    from dpspark.release.compact import write_compact_release

    return write_compact_release(cfg.output, release=release, **common)


def describe_plan(cfg: ReleaseConfig) -> dict[str, Any]:
    """What a release will do, from public inputs only (for ``--dry-run``)."""
    if cfg.mechanism == "compact":
        plan = compact_plan(cfg)
        return {"mechanism": "compact", "counting": plan.mechanism.describe(), "error_bar": plan.mechanism.accuracy(cfg.beta),
                "compact": plan.describe()}
    mech = count_mechanism(cfg)
    return {"mechanism": cfg.mechanism, "counting": mech.describe(), "error_bar": mech.accuracy(cfg.beta)}
