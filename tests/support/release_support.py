"""Helpers shared by the release and lookup tests (no tests here): hand-built releases."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from dpspark.mechanisms.histogram.result import AccuracyStatement, HistogramRelease, add_remove_statement
from dpspark.mechanisms.histogram.writer import write_sparse_release
from dpspark.rng import SeededRandom, bias_epsilon
from dpspark.universe import Universe

TEST_RNG_NAME = SeededRandom.name
CONFIG = {"epsilon": "1/2", "delta": "2^-40", "beta": "1/20", "mechanism": "GeoSample"}
INPUT = {"path": "data/events.parquet", "format": "parquet"}


def hand_release(
    universe: Universe,
    indices: list[int],
    counts: list[int],
    *,
    n: int = 100,
    delta: Fraction = Fraction(1, 2**40),
    per_query_above: int = 12,
) -> HistogramRelease:
    """A HistogramRelease built through its constructor, with a plausible exact statement.

    ``indices`` are 1-based universe indexes (as stored in releases); HistogramRelease is 0-based.
    """
    return HistogramRelease(
        algorithm="SparseHistogram",
        indices=tuple(i - 1 for i in indices),
        counts=tuple(counts),
        universe_size=universe.size,
        n=n,
        privacy=add_remove_statement(
            n,
            exp_eps=Fraction(41, 32),
            bias_epsilon=bias_epsilon(2 * n + 1),
            delta=delta,
            theorem="BV Thm 6.8(ii) under add/remove",
            notes="hand-built for tests",
        ),
        accuracy=AccuracyStatement.histogram(9, Fraction(1, 20), per_query_above, 14, Fraction(1, 20), "test"),
        parameters={"mechanism": {"mechanism": "GeoSample", "n": n, "epsilon": "1/2", "exp_eps": {"num": 41, "den": 32}},
                    "s_bits": 90, "beta": "1/20"},
    )


def write(
    root: Path,
    universe: Universe,
    key_columns: list[str],
    release: HistogramRelease,
    name: str = "rel",
    rng_name: str = TEST_RNG_NAME,
    config: dict[str, Any] | None = None,
) -> Path:
    """Write ``release`` under ``root/name`` with the test config."""
    return write_sparse_release(
        root / name,
        release=release,
        universe=universe,
        key_columns=key_columns,
        config=dict(CONFIG if config is None else config),
        input_description=dict(INPUT),
        rng_name=rng_name,
    )
