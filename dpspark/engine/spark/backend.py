"""The Spark backend: stages on a Spark DataFrame; the input is cached only when a mechanism reads it twice."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from dpspark.engine.kernels import BackendCore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.rng import RandomSource


class SparkBackend(BackendCore):
    """Stages on the input DataFrame ``frame`` (kernels: ``engine/spark/`` and the families' Spark kernels).

    ``cache_input``: the mechanism reads the input twice or more, so it is cached here and unpersisted by
    :meth:`close` - unless the caller had cached it already (then its cache is the caller's to release).
    """

    engine = "spark"

    def __init__(self, frame: "DataFrame", rng: "RandomSource", progress: Callable[[str], None] | None = None,
                 *, cache_input: bool = False) -> None:
        self._owns_cache = cache_input and not frame.is_cached
        self.frame = frame.cache() if self._owns_cache else frame
        super().__init__(rng, progress)

    def close(self) -> None:
        """Unpersist the input if this backend cached it (idempotent)."""
        if self._owns_cache:
            self._owns_cache = False
            self.frame.unpersist()
