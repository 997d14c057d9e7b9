"""Helpers shared by the compact release tests (no tests here): small releases built without Spark."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from dpspark.mechanisms.compact import CompactRelease, compact_histogram
from dpspark.mechanisms.compact.plan import plan_compact
from dpspark.mechanisms.compact.writer import write_compact_release
from dpspark.rng import SeededRandom
from dpspark.universe import Universe

CONFIG = {"epsilon": "1", "beta": "1/20", "mechanism": "compact"}
INPUT = {"path": "data/events.parquet", "format": "parquet"}


def build(universe: Universe, counts: dict[int, int], n: int, seed: bytes, m: int | None = None) -> CompactRelease:
    """A compact release of ``counts`` (0-based indexes) at epsilon = 1 with the job's plan."""
    plan = plan_compact(n, universe.size, Fraction(1), Fraction(1, 20), m=m)
    return compact_histogram(counts, universe.size, n, plan.mechanism, SeededRandom(seed),
                             epsilon2=plan.epsilon2, beta="1/20", m=plan.m)


def write(root: Path, universe: Universe, release: CompactRelease, *, name: str = "rel", batch_rows: int = 8,
          created_utc: str | None = None) -> Path:
    """Write ``release`` under ``root/name`` (key column ``k``)."""
    return write_compact_release(root / name, release=release, universe=universe, key_columns=["k"], config=CONFIG,
                                 input_description=INPUT, rng_name=SeededRandom.name, batch_rows=batch_rows,
                                 created_utc=created_utc)
