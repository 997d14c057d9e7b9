"""What a mechanism's ``run`` talks to: one input, stages computed on a backend, exact results on the driver.

* :class:`Backend` - the protocol both engines implement (:class:`~dpspark.engine.spark.backend.SparkBackend`,
  :class:`~dpspark.engine.arrow.backend.ArrowBackend`): ``compute(stage)`` for every stage type, the pass
  counter, the release's keyed batch secret, the end time of the latest pass, and the input cache.
* :func:`supported_engines` - derived from the stage types a mechanism declares (its ``stages()``): an engine
  runs a mechanism iff its backend has a kernel for each of them (:func:`~dpspark.engine.kernels.kernel_path`).
* :func:`open_backend` - the backend of one release's data pass; its block end releases the input cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from dpspark.engine.driver_counts import finish_counts
from dpspark.engine.errors import CuratorError, InputError
from dpspark.engine.kernels import ENGINES, KernelMissingError, kernel_path

if TYPE_CHECKING:
    from dpspark.rng import RandomSource


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


__all__ = ["ENGINES", "Backend", "CuratorError", "InputError", "KernelMissingError", "finish_counts",
           "input_reads", "kernel_path", "open_backend", "stage_types", "supported_engines"]


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
    if mechanism is not None:
        backend.plan_passes(len(mechanism.stages()))  # "pass K of N" and the estimate of the time left
    try:
        yield backend
    finally:
        backend.close()
