"""The Arrow backend: the engine on one machine, without a JVM (pyarrow's dataset and compute APIs).

* :mod:`.inputs` - opening a local file, directory or in-memory table (metadata first, before any spend);
* :mod:`.counts`, :mod:`.sums` - the generic kernels (counts per index, clipped fixed-point sums),
  giving the same exact results as the Spark backend; the counts' steps that family kernels reuse are
  exported by name (``encode_keys``, ``bound_units``, ``first_k_per_unit``, ``csv_ints_fit_int32``);
* :mod:`.backend` - :class:`ArrowBackend`, the :class:`~dpspark.engine.backend.Backend` that runs them.

Nothing here imports pyspark.
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "ArrowBackend": "backend",
    "bound_units": "counts",
    "csv_ints_fit_int32": "counts",
    "encode_keys": "counts",
    "first_k_per_unit": "counts",
    "input_schema": "inputs",
    "is_local_path": "inputs",
    "open_dataset": "inputs",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = sorted(_NAMES)
