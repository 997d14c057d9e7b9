"""The Spark backend: stages on a Spark DataFrame; the input is cached only when a mechanism reads it twice."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from dpspark.engine.kernels import BatchSecret, compute_on

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.rng import RandomSource


class SparkBackend:
    """Stages on the input DataFrame ``frame`` (kernels: ``engine/spark/`` and the families' Spark kernels).

    ``cache_input``: the mechanism reads the input twice or more, so it is cached here and unpersisted by
    :meth:`close` - unless the caller had cached it already (then its cache is the caller's to release).
    """

    engine = "spark"

    def __init__(self, frame: "DataFrame", rng: "RandomSource", progress: Callable[[str], None] | None = None,
                 *, cache_input: bool = False) -> None:
        self._owns_cache = cache_input and not frame.is_cached
        self.frame = frame.cache() if self._owns_cache else frame
        self.rng = rng
        self.progress: Callable[[str], None] = progress or (lambda _m: None)
        self.passes_run = 0
        self.last_pass_end: float | None = None
        self.batch_secret = BatchSecret(rng)

    def compute(self, stage: Any) -> Any:
        """The exact result of ``stage``, by the Spark kernel of its type."""
        return compute_on(self.engine, self, stage)

    def pass_done(self) -> None:
        """Count one completed pass and note when it ended (the runner's padding clock starts there)."""
        self.passes_run += 1
        self.last_pass_end = time.monotonic()

    def close(self) -> None:
        """Unpersist the input if this backend cached it (idempotent)."""
        if self._owns_cache:
            self._owns_cache = False
            self.frame.unpersist()
