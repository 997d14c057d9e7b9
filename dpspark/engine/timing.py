"""Optional wall-clock padding of a driver mechanism (docs/balcer-vadhan-notes.md §E10).

Iteration counts below their public bounds and Python big-integer arithmetic
make running time data-dependent. Where an adversary may observe the driver's
running time, pass ``min_seconds`` at least the public worst-case time for the
configured n (measure it with the benchmark): the call then returns no earlier
than that. Floats here decide only when to return, never a released value.
"""

from __future__ import annotations

import time


def pad_until(start: float, min_seconds: float | None) -> None:
    """Sleep until ``min_seconds`` have passed since ``start`` (a ``time.monotonic()`` value); no-op for None."""
    if min_seconds is None:
        return
    if min_seconds < 0:
        raise ValueError("min_seconds must be >= 0")
    remaining = start + min_seconds - time.monotonic()  # report
    if remaining > 0:
        time.sleep(remaining)
