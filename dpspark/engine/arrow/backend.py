"""The Arrow backend: stages on a local file, directory or pyarrow Table, on one machine, no JVM.

Kernels: :mod:`dpspark.engine.arrow.counts` (the count stage), :mod:`dpspark.engine.arrow.sums` (clipped
sums) and the families' Arrow kernels; the input is opened by :mod:`dpspark.engine.arrow.inputs`. Each pass
re-scans the input, so there is no cache to release.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from dpspark.engine.arrow.inputs import _format_from_suffix, input_schema, is_local_path, open_dataset, scan_table
from dpspark.engine.errors import InputError
from dpspark.engine.kernels import BackendCore

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as ds

    from dpspark.rng import RandomSource


class ArrowBackend(BackendCore):
    """Stages on a local file, directory (Parquet, CSV, ORC, JSON lines) or an in-memory pyarrow Table."""

    engine = "arrow"

    def __init__(self, source: "str | Path | pa.Table | ds.Dataset", rng: "RandomSource",
                 progress: Callable[[str], None] | None = None, *, format: str | None = None,
                 options: dict[str, str] | None = None) -> None:
        self.source = source
        self.format = format
        self.dataset, self.csv_infer = open_dataset(source, format, options)
        super().__init__(rng, progress)

    def close(self) -> None:
        """Nothing is cached: every pass re-scans the input."""


# the input helpers other modules have imported from here
__all__ = ["ArrowBackend", "InputError", "_format_from_suffix", "input_schema", "is_local_path", "open_dataset", "scan_table"]
