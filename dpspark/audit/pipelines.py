"""Release pipelines in the auditor's form ``run(dataset, rng) -> output`` (driver, compact, toy-field compact, Spark path).

Each builder fixes the public parameters and returns a callable taking a
dataset (a count, or a mapping {0-based index: count}) and a RandomSource.
The ``release`` argument lets a test or the lead swap in a mutant or the
Spark-path implementation with the same signature as the driver function.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dpspark.audit.compact_law import CompactView, toy_compact_histogram
from dpspark.audit.events import Event
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler

from dpspark.noise import CountingMechanism
from dpspark.mechanisms.histogram import (
    HistogramRelease,
    basic_histogram,
    pure_sparse_histogram,
    sparse_histogram,
    stability_histogram,
)
from dpspark.engine.timing import pad_until
from dpspark.rng import RandomSource

Pipeline = Callable[[Any, RandomSource], Any]


def counting_pipeline(mechanism: CountingMechanism) -> Pipeline:
    """run(c, rng) = M(c, U): one noisy count straight from ``draw`` (about 10-60 us per run)."""

    def run(c: int, rng: RandomSource) -> int:
        return mechanism.draw(c, rng)

    return run


def basic_pipeline(
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    bins: Iterable[int] | None = None,
    *,
    release: Callable[..., HistogramRelease] = basic_histogram,
) -> Pipeline:
    """BasicHistogram over the public ``bins`` (default: the whole universe)."""
    public = list(range(universe_size)) if bins is None else list(bins)

    def run(counts: Mapping[int, int], rng: RandomSource) -> HistogramRelease:
        return release(counts, public, universe_size, n, mechanism, rng)

    return run


def stability_pipeline(
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    delta: Any,
    *,
    release: Callable[..., HistogramRelease] = stability_histogram,
) -> Pipeline:
    """StabilityHistogram (Alg 5.4) with threshold from ``delta``."""

    def run(counts: Mapping[int, int], rng: RandomSource) -> HistogramRelease:
        return release(counts, universe_size, n, mechanism, delta, rng)

    return run


def sparse_pipeline(
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    delta: Any,
    *,
    beta: Any = "1/20",
    release: Callable[..., HistogramRelease] = sparse_histogram,
) -> Pipeline:
    """SparseHistogram (Alg 6.21); ``beta`` must exceed its extra failure probability."""

    def run(counts: Mapping[int, int], rng: RandomSource) -> HistogramRelease:
        return release(counts, universe_size, n, mechanism, delta, rng, beta=beta)

    return run


def pure_sparse_pipeline(
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    gamma: Any,
    *,
    beta: Any = "1/20",
    release: Callable[..., HistogramRelease] = pure_sparse_histogram,
) -> Pipeline:
    """PureSparseHistogram (Alg 6.9 with the {0..n} mixing fix); ``beta`` as for Sparse."""

    def run(counts: Mapping[int, int], rng: RandomSource) -> HistogramRelease:
        return release(counts, universe_size, n, mechanism, gamma, rng, beta=beta)

    return run


def _view(release: Any, watch: Sequence[int]) -> CompactView:
    return CompactView(
        counts=dict(zip(watch, release.lookup(list(watch)))),
        field_values=dict(zip(watch, release.field_values(list(watch)))),
        privacy=release.privacy,
    )


def compact_pipeline(
    universe_size: int,
    n: int,
    mechanism: CountingMechanism,
    watch: Sequence[int],
    *,
    epsilon2: Any,
    beta: Any = "1/20",
    m: int | None = None,
    sampler: str = "rounded-cdf",
    min_seconds: float | None = None,
    release: Callable[..., Any] | None = None,
) -> Pipeline:
    """CompactHistogram (BV Alg 8.2) at production field sizes; the output is a :class:`CompactView` of ``watch``.

    ``min_seconds`` pads the construction's wall time (``pad_until``, measured from
    before the call) so neighbours take the same padded time when the work fits.
    ``release`` replaces :func:`dpspark.mechanisms.compact.compact_histogram` (same signature), e.g. a mutant.
    """
    from dpspark.mechanisms.compact import compact_histogram

    build = release or compact_histogram
    bins = list(watch)

    def run(counts: Mapping[int, int], rng: RandomSource) -> CompactView:
        start = time.monotonic()
        rel = build(counts, universe_size, n, mechanism, rng, epsilon2=epsilon2, beta=beta, m=m, sampler=sampler)
        pad_until(start, min_seconds)
        return _view(rel, bins)

    return run


def toy_compact_pipeline(
    universe_size: int, n: int, mechanism: CountingMechanism, sampler: EmptyBinSampler, watch: Sequence[int]
) -> Pipeline:
    """CompactHistogram over a toy field GF(2^sampler.m) (see :mod:`dpspark.audit.compact_law`); output a CompactView."""
    bins = list(watch)

    def run(counts: Mapping[int, int], rng: RandomSource) -> CompactView:
        return _view(toy_compact_histogram(counts, universe_size, n, mechanism, sampler, rng), bins)

    return run


# ------------------------------------------------------------------ Spark path

#: driver(cfg, indexes, counts, rng) -> release: the job's driver stage (dpspark.engine.runner.run_mechanism's shape)
Driver = Callable[[Any, list[int], list[int], RandomSource], Any]


def job_driver(cfg: Any, indexes: list[int], counts: list[int], rng: RandomSource) -> HistogramRelease:
    """The real job's driver stage: :func:`dpspark.engine.runner.run_mechanism` with no progress output."""
    from dpspark.engine.runner import run_mechanism

    return run_mechanism(cfg, indexes, counts, rng, lambda _msg: None)


def spark_pipeline(spark: Any, drivers: Mapping[str, Driver]) -> Pipeline:
    """run(cfg, rng): the job's Spark counting stage once, then every driver on the collected counts.

    The dataset is a :class:`dpspark.api.config.ReleaseConfig` (its input is D or D').
    Counting is the production path: ``read_input``, ``sparse_counts`` (keyed
    contribution bounding with ``rng``), ``collect_counts``, ``counts_to_python``.
    The output is {driver name: release}; select one with :func:`on_output`.
    Several drivers share one Spark run, so a mutant and the honest driver are
    audited on the same number of whole-pipeline runs for the cost of one.
    """
    from dpspark.engine.stages import CountsStage
    from dpspark.engine.spark.counts import collect_counts, counts_to_python, read_input, sparse_counts

    def run(cfg: Any, rng: RandomSource) -> dict[str, Any]:
        table = collect_counts(sparse_counts(read_input(spark, cfg.input), CountsStage.from_spec(cfg), rng))
        indexes, counts = counts_to_python(table)
        return {name: driver(cfg, list(indexes), list(counts), rng) for name, driver in drivers.items()}

    return run


def on_output(name: str, event: Event) -> Event:
    """``event`` on the output ``name`` of a multi-driver pipeline (e.g. :func:`spark_pipeline`)."""
    return Event(f"{name}: {event.name}", lambda out: event(out[name]))
