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
#: Largest range d (in bits) a counting mechanism is built with: 2^24 bits is a 2 MiB integer. Every draw
#: evaluates its CDF about log2(n) times on integers of that size, and GMP aborts the process (it cannot
#: raise) when an integer outgrows its limits, so larger ranges are refused before they are computed.
MAX_D_BITS = 1 << 24
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
