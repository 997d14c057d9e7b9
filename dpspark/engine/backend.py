"""What a mechanism's ``run`` talks to: one input, stages computed on a backend, exact results on the driver."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from dpspark.engine.stages import CountsStage, OuterProductStage, SumsStage
from dpspark.errors import ValueFreeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.engine.spec import ReleaseSpec
    from dpspark.rng import RandomSource


class CuratorError(ValueFreeError, ValueError):
    """The data breaks a declared public bound (e.g. more units than max_units with on_excess_units = "refuse").

    Its text names public parameters only (a :class:`~dpspark.errors.ValueFreeError`).
    """


class StageContext(Protocol):
    """The engine side of a release run, as a mechanism sees it."""

    def counts_stage(self, spec: "ReleaseSpec") -> CountsStage:
        """The count stage for ``spec`` (explicit parameters)."""

    def counts(self, stage: CountsStage, spec: "ReleaseSpec") -> tuple[list[int], list[int]]:
        """(0-based indexes ascending, exact counts) of the non-zero bins."""


class SparkContext:
    """Stages on a Spark DataFrame; the input is cached when a mechanism makes more than one pass."""

    def __init__(self, df: "DataFrame", rng: "RandomSource", progress=None, passes: int = 1) -> None:  # type: ignore[no-untyped-def]
        self.df = df.cache() if passes > 1 else df  # read once when a mechanism makes several passes
        self.rng = rng
        self.progress = progress or (lambda _m: None)
        self.passes_run = 0
        self.last_pass_end: float | None = None  # time.monotonic() when the latest data pass ended
        self._batch_secret: bytes | None = None

    def batch_secret(self) -> bytes:
        """The release's batch key: drawn once, on first use, so every pass puts a unit in the same batch."""
        if self._batch_secret is None:
            self._batch_secret = self.rng.bits(128).to_bytes(16, "big")
        return self._batch_secret

    def outer_products(self, stage: "OuterProductStage") -> list[dict[str, int]]:
        """Per batch (ascending; one entry without batches): {"batch", "kept", "sum_i_j"...} as exact ints."""
        from dpspark.engine.spark.outer import KEPT, outer_product_sums, pair_column
        from dpspark.engine.spark.sums import BATCH

        self.progress(f"pass {self.passes_run + 1}: outer products on Spark")
        secret = self.batch_secret() if stage.batches is not None else None
        table = outer_product_sums(self.df, stage, secret)
        self.passes_run += 1
        self.last_pass_end = time.monotonic()
        out: dict[int, dict[str, int]] = {}
        for r in table.to_pylist():
            b = int(r.pop(BATCH, 0) or 0)
            out[b] = {k: (0 if v is None else int(v)) for k, v in r.items()}
        names = [KEPT] + [pair_column(i, j) for i, j in stage.pairs()]
        return [{"batch": b, **out.get(b, dict.fromkeys(names, 0))} for b in range(stage.batches or 1)]

    def sums(self, stage: "SumsStage") -> list[dict[str, int]]:
        """Per batch (ascending; one entry without batches): {"batch", "units", "sum_<col>"...} as exact ints."""
        from dpspark.engine.spark.sums import BATCH, clipped_sums

        self.progress(f"pass {self.passes_run + 1}: clipped sums on Spark")
        secret = self.batch_secret() if stage.batches is not None else None
        table = clipped_sums(self.df, stage, secret)
        self.passes_run += 1
        self.last_pass_end = time.monotonic()
        rows = table.to_pylist()
        out: dict[int, dict[str, int]] = {}
        for r in rows:
            b = int(r.pop(BATCH, 0) or 0)
            out[b] = {k: (0 if v is None else int(v)) for k, v in r.items()}
        nb = stage.batches or 1
        names = ["units"] + [f"sum_{c}" for c in stage.columns]
        return [{"batch": b, **out.get(b, dict.fromkeys(names, 0))} for b in range(nb)]  # empty batches too

    def counts_stage(self, spec: "ReleaseSpec") -> CountsStage:
        return CountsStage.from_spec(spec)

    def counts(self, stage: CountsStage, spec: "ReleaseSpec | None" = None) -> tuple[list[int], list[int]]:
        from dpspark.engine.spark.counts import collect_counts, counts_to_python, sparse_counts

        self.progress("reading input and counting keys on Spark")
        table = collect_counts(sparse_counts(self.df, stage, self.rng))
        self.passes_run += 1
        self.last_pass_end = time.monotonic()
        self.progress("counts collected on the driver")
        indices, counts = counts_to_python(table)
        del table
        return finish_counts(indices, counts, stage, self.rng)


def finish_counts(indices: list[int], counts: list[int], stage: CountsStage, rng: "RandomSource") -> tuple[list[int], list[int]]:
    """Driver-side part of the count stage shared by every backend: the row-level excess rule, canonical order.

    Without a unit column every row is a unit, so the total count is the number of units. "refuse" fails
    (before any noise); "truncate" keeps the first n rows in keyed-hash order of their index - a function
    of the multiset of rows, so adding one row changes the kept multiset by at most one replacement.
    """
    order = sorted(range(len(indices)), key=indices.__getitem__)
    indices = [indices[i] for i in order]
    counts = [counts[i] for i in order]
    if stage.unit_column is not None or sum(counts) <= stage.max_units:
        return indices, counts
    if stage.on_excess_units == "refuse":
        raise CuratorError(
            f"the input holds more rows than privacy.max_units = {stage.max_units} and on_excess_units = 'refuse' "
            "(curator-side check, before any noise was drawn); raise max_units or use on_excess_units = 'truncate'")
    import hashlib

    key = rng.bits(128).to_bytes(16, "big")
    rank = sorted(range(len(indices)), key=lambda i: hashlib.blake2b(indices[i].to_bytes(32, "big"), key=key).digest())
    left = stage.max_units
    kept = [0] * len(indices)
    for i in rank:  # a loop over the distinct keys (at most n + excess); only the driver's exact ints
        take = min(counts[i], left)
        kept[i] = take
        left -= take
    pairs = [(x, c) for x, c in zip(indices, kept) if c > 0]
    return [x for x, _ in pairs], [c for _, c in pairs]


# --- the seam the runner uses (issue 21): the backend protocol's helper replaces these bodies -------------
def supported_engines(mech: Any) -> tuple[str, ...]:
    """The engines that compute every stage ``mech`` (a constructed mechanism) asks for.

    Interim body: the mechanism class's declaration. The backend protocol derives it from the stages.
    """
    cls = type(mech)
    per_spec = getattr(cls, "engines_for", None)
    return tuple(per_spec(mech.spec)) if per_spec is not None else tuple(getattr(cls, "engines", ("arrow", "spark")))


@contextmanager
def open_backend(engine: str, *, rng: "RandomSource", progress: Any = None, passes: int = 1, data: Any = None,
                 source: Any = None, input_format: str | None = None,
                 input_options: dict[str, str] | None = None) -> Iterator[Any]:
    """The backend of one release's data pass; its input cache is released when the block ends.

    ``engine`` "spark": ``data`` is the input DataFrame. "arrow": ``source`` is a local path or a pyarrow
    Table (``input_format``/``input_options`` for a path). Call inside the data pass: opening reads metadata.
    """
    if engine == "arrow":
        from dpspark.engine.arrow.backend import ArrowContext

        ctx: Any = ArrowContext(source, rng, progress, format=input_format, options=input_options)
    else:
        ctx = SparkContext(data, rng, progress, passes=passes)
    yield ctx
