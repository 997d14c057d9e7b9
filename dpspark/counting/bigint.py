"""Big-integer backend of the counting mechanisms: GMP (gmpy2) by default, plain ints for comparison.

Both give identical results (tests check it); GMP is 2-50x faster on the
multi-kilobit integers of FastSample and GeoSample (scripts/bench/counting.py).
The switch exists for that benchmark and is process-wide; it is never read
from a config or the environment.
"""

from __future__ import annotations

from typing import Any, Callable

import gmpy2

BACKENDS = ("gmpy2", "int")
_backend = "gmpy2"


def big(x: int) -> Any:
    """Convert an int to the active big-integer type."""
    return gmpy2.mpz(x) if _backend == "gmpy2" else int(x)


def active() -> str:
    """Name of the active backend."""
    return _backend


def set_backend(name: str) -> None:
    """Select the backend for mechanisms built afterwards (benchmarks and tests only)."""
    global _backend
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    _backend = name


def converter() -> Callable[[int], Any]:
    """The conversion function of the active backend."""
    return big if _backend == "gmpy2" else int
