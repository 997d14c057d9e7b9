"""How a backend finds the kernel of a stage: by the stage's type, never by asking which backend it is.

Generic stages map to kernels in ``engine/spark/`` and ``engine/arrow/`` (:data:`GENERIC_KERNELS`); a family's
:class:`~dpspark.engine.stages.FamilyStage` names its own. Paths are "module:function" strings, imported on first
use and called as ``function(backend, stage)``, so declaring support imports neither pyspark nor any family.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dpspark.engine.progress import PassCounter
from dpspark.engine.stages import CountsStage, FamilyStage, OuterProductStage, SumsStage
from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.rng import RandomSource

#: the engines, in the order :func:`dpspark.engine.backend.supported_engines` lists them
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


def compute_on(engine: str, backend: Any, stage: Any) -> Any:
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


class BackendCore:
    """What every backend shares: the release's generator and progress, the pass counter and its clock, the
    batch secret, and ``compute`` by the kernel of the stage's type on ``engine``.

    ``progress`` is wrapped in a :class:`~dpspark.engine.progress.PassCounter`: once :meth:`plan_passes` gave
    the plan's number of passes N, a kernel's ``pass K: ...`` line reads ``pass K of N: ...`` and each finished
    pass of a multi-pass release is reported with an estimate of the time left.
    """

    engine: str

    def __init__(self, rng: "RandomSource", progress: Callable[[str], None] | None = None) -> None:
        self.rng = rng
        self._passes = PassCounter(progress or (lambda _m: None))
        self.progress: Callable[[str], None] = self._passes
        self.passes_run = 0
        self.last_pass_end: float | None = None
        self.batch_secret = BatchSecret(rng)

    def compute(self, stage: Any) -> Any:
        """The exact result of ``stage``, by this engine's kernel of its type."""
        return compute_on(self.engine, self, stage)

    def plan_passes(self, planned: int) -> None:
        """The plan's number of passes (public: the mechanism's ``stages()``), for "pass K of N" and the estimate."""
        self._passes.planned = planned

    def pass_done(self) -> None:
        """Count one completed pass and note when it ended (the runner's padding clock starts there)."""
        self.passes_run += 1
        self.last_pass_end = time.monotonic()
        self._passes.pass_done()

    def close(self) -> None:
        """Release what the backend holds (nothing by default)."""
