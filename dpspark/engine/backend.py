"""What a mechanism's ``run`` talks to: one input, stages computed on a backend, exact results on the driver.

* :class:`Backend` - the protocol both engines implement (:class:`~dpspark.engine.spark.backend.SparkBackend`,
  :class:`~dpspark.engine.arrow.backend.ArrowBackend`): ``compute(stage)`` for every stage type, the pass
  counter, the release's keyed batch secret, the end time of the latest pass, and the input cache.
* :func:`supported_engines` - derived from the stage types a mechanism declares (its ``stages()``): an engine
  runs a mechanism iff its backend has a kernel for each of them (:func:`kernel_path`).
* :func:`open_backend` - the backend of one release's data pass; its block end releases the input cache.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from dpspark.engine.stages import CountsStage, FamilyStage, OuterProductStage, SumsStage
from dpspark.errors import DPSparkError, ValueFreeError

if TYPE_CHECKING:
    from dpspark.rng import RandomSource

#: the engines, in the order :func:`supported_engines` lists them
ENGINES = ("arrow", "spark")

#: the generic stages' kernels per engine ("module:function", called as function(backend, stage))
GENERIC_KERNELS: dict[str, dict[type, str]] = {
    "spark": {
        CountsStage: "dpspark.engine.spark.counts:counts_kernel",
        SumsStage: "dpspark.engine.spark.sums:sums_kernel",
        OuterProductStage: "dpspark.engine.spark.outer:outer_kernel",
    },
    "arrow": {
        CountsStage: "dpspark.engine.arrow.counts:counts_kernel",
        SumsStage: "dpspark.engine.arrow.sums:sums_kernel",
    },
}


class CuratorError(ValueFreeError, ValueError):
    """The data breaks a declared public bound (e.g. more units than max_units with on_excess_units = "refuse").

    Its text names public parameters only (a :class:`~dpspark.errors.ValueFreeError`).
    """


class InputError(DPSparkError, ValueError):
    """The input does not match the config (missing column, unreadable path, too many units)."""


class Backend(Protocol):
    """The engine side of a release run, as a mechanism sees it: nothing here names an engine."""

    #: completed passes over the data (each kernel counts its own)
    passes_run: int
    #: ``time.monotonic()`` at the end of the latest pass, None before the first
    last_pass_end: float | None
    #: the progress callback kernels report to
    progress: Callable[[str], None]

    def compute(self, stage: Any) -> Any:
        """The exact result of ``stage`` (a generic stage or a family's :class:`FamilyStage`)."""

    def batch_secret(self) -> bytes:
        """The release's 128-bit batch key: drawn once from the release's generator, on first use."""

    def pass_done(self) -> None:
        """Count one completed pass (kernels call it) and note when it ended."""

    def close(self) -> None:
        """Release the input cache (idempotent)."""


class KernelMissingError(DPSparkError, ValueError):
    """A backend was asked for a stage its engine has no kernel for (the engine choice should have refused it)."""


def kernel_path(engine: str, stage_type: type) -> str | None:
    """The "module:function" computing ``stage_type`` on ``engine`` (None: that engine cannot)."""
    if issubclass(stage_type, FamilyStage):
        return stage_type.kernels.get(engine)
    for cls in stage_type.__mro__:
        path = GENERIC_KERNELS.get(engine, {}).get(cls)
        if path is not None:
            return path
    return None


@lru_cache(maxsize=None)
def kernel(engine: str, stage_type: type) -> Callable[[Any, Any], Any]:
    """The kernel function of ``stage_type`` on ``engine``, imported on first use."""
    path = kernel_path(engine, stage_type)
    if path is None:
        raise KernelMissingError(f"the {engine} engine has no kernel for {stage_type.__name__}")
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def compute_on(engine: str, backend: Backend, stage: Any) -> Any:
    """``backend.compute(stage)``: the engine's kernel for the stage's type, called with the backend."""
    if kernel_path(engine, type(stage)) is None and isinstance(stage, FamilyStage):
        refusal = stage.no_kernel(engine)  # a family's own words, e.g. why its stage needs Spark
        if refusal is not None:
            raise refusal
    return kernel(engine, type(stage))(backend, stage)


class BatchSecret:
    """The release's batch key, drawn from ``rng`` once, on first use (every pass puts a unit in one batch)."""

    def __init__(self, rng: "RandomSource") -> None:
        self.rng = rng
        self._secret: bytes | None = None

    def __call__(self) -> bytes:
        if self._secret is None:
            self._secret = self.rng.bits(128).to_bytes(16, "big")
        return self._secret


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


# --- the seam the runner uses ------------------------------------------------------------------------------
def stage_types(mech: Any) -> tuple[type, ...]:
    """The stage types ``mech`` (a constructed mechanism) declares in its ``stages()`` (data-free)."""
    return tuple(dict.fromkeys(s.stage for s in mech.stages()))


def input_reads(mech: Any) -> int:
    """How many of ``mech``'s passes read the input itself (the rest read the mechanism's own prepared units)."""
    return sum(1 for s in mech.stages() if s.reads_input)


def supported_engines(mech: Any) -> tuple[str, ...]:
    """The engines whose backend has a kernel for every stage type ``mech`` (a constructed mechanism) declares."""
    types = stage_types(mech)
    return tuple(e for e in ENGINES if all(kernel_path(e, t) is not None for t in types))


@contextmanager
def open_backend(engine: str, *, rng: "RandomSource", progress: Any = None, passes: int = 1, data: Any = None,
                 source: Any = None, input_format: str | None = None,
                 input_options: dict[str, str] | None = None, mechanism: Any = None) -> Iterator[Backend]:
    """The backend of one release's data pass; its input cache is released when the block ends (also on error).

    ``engine`` "spark": ``data`` is the input DataFrame, cached only when the input is read twice or more:
    ``passes`` such reads, or, with ``mechanism``, :func:`input_reads` of it. "arrow": ``source`` is a local
    path or a pyarrow Table (``input_format``/``input_options`` for a path); each pass re-scans it. Call inside
    the data pass: opening reads metadata.
    """
    reads = input_reads(mechanism) if mechanism is not None else passes
    if engine == "arrow":
        from dpspark.engine.arrow.backend import ArrowBackend

        backend: Any = ArrowBackend(source, rng, progress, format=input_format, options=input_options)
    else:
        from dpspark.engine.spark.backend import SparkBackend

        backend = SparkBackend(data, rng, progress, cache_input=reads > 1)
    try:
        yield backend
    finally:
        backend.close()
