"""``K``: dpspark.gf.kernels (numba), imported on first attribute access.

:class:`dpspark.gf.field.GF2m` holds a field's constants and converts elements without numba; only its
arithmetic methods run kernels. A compact lookup of a few keys (:mod:`dpspark.gf.numpy_eval`) therefore
opens the field without importing numba (about 0.3 s) or loading compiled kernels.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


class _LazyKernels:
    """Forwards attribute reads to dpspark.gf.kernels, importing it on the first one."""

    _module: ModuleType | None = None

    def __getattr__(self, name: str) -> Any:
        if _LazyKernels._module is None:
            from dpspark.gf import kernels

            _LazyKernels._module = kernels
        return getattr(_LazyKernels._module, name)


K = _LazyKernels()
