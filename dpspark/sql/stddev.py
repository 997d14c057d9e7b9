"""``STDDEV_POP``: the square root of a released variance, with the variance's error bar mapped through it.

``STDDEV_POP(x, contribution_bounds_per_group => (lo, hi)) AS sd`` compiles to the ``groups`` variance
aggregate ``sd_variance`` (the release holds it, exact); the standard deviation is post-processing of that
private output, so it costs nothing and floats are fine here (display only, never a check or a statement).

**The bar.** The variance's bar says |V - v| <= e with probability >= 1 - beta, V >= 0 the true variance and v
the released one (possibly negative: noise). Then V lies in [max(v - e, 0), v + e], and since the square root
is increasing on [0, inf), sqrt(V) lies in [sqrt(max(v - e, 0)), sqrt(max(v + e, 0))] with the same
probability: ``<sd>_lo`` and ``<sd>_hi`` (each rounded outward by one float step). The value is
sqrt(max(v, 0)) (the variance clamped at 0 first); ``<sd>_error`` = the larger distance from it to either end,
a symmetric bar that contains the interval.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Mapping

__all__ = ["SqlRelease", "stddev_bar", "with_stddev"]


def stddev_bar(variance: Fraction | None, error: Fraction | None) -> tuple[float | None, ...]:
    """(sd, lo, hi, error) of a released variance and its bar (None where the variance is undefined)."""
    if variance is None:
        return None, None, None, None
    sd = math.sqrt(float(max(variance, Fraction(0))))  # report
    if error is None:
        return sd, None, None, None
    lo = math.nextafter(math.sqrt(float(max(variance - error, Fraction(0)))), 0.0)  # report
    hi = math.nextafter(math.sqrt(float(max(variance + error, Fraction(0)))), math.inf)  # report
    return sd, max(lo, 0.0), hi, max(sd - lo, hi - sd)  # report


def with_stddev(frame: Any, stddev: Mapping[str, str]) -> Any:
    """``frame`` (a groups release's ``to_pandas()``) with ``<sd>``, ``<sd>_error``, ``<sd>_lo`` and ``<sd>_hi``
    for each ``sd -> variance`` of ``stddev``, placed before the variance's columns."""
    import pandas as pd

    cols = list(frame.columns)
    out = frame.copy()
    for sd, var in stddev.items():
        exact = [None if v is None or v != v else Fraction(str(v)) for v in frame[f"{var}_exact"]]
        errors = [None if e is None or e != e else Fraction(str(e)) for e in frame[f"{var}_error_exact"]]
        rows = [stddev_bar(v, e) for v, e in zip(exact, errors)]
        new = {f"{sd}{suffix}": pd.Series([r[i] for r in rows], index=frame.index, dtype="float64")
               for i, suffix in enumerate(("", "_lo", "_hi", "_error"))}
        at = cols.index(var)
        cols[at:at] = [f"{sd}", f"{sd}_error", f"{sd}_lo", f"{sd}_hi"]
        for name, series in new.items():
            out[name] = series
    return out[cols]


class SqlRelease:
    """An opened ``groups`` release of a query with ``STDDEV_POP``: every attribute is the release's, and
    :meth:`to_pandas` adds the standard deviations (:func:`with_stddev`)."""

    def __init__(self, release: Any, stddev: Mapping[str, str]) -> None:
        self._release = release
        #: ``STDDEV_POP(...) AS name``: name -> the released variance aggregate's name
        self.stddev = dict(stddev)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._release, name)

    def __repr__(self) -> str:
        return repr(self._release)

    def to_pandas(self) -> Any:
        """The release's table with each standard deviation beside its variance (floats: display only)."""
        return with_stddev(self._release.to_pandas(), self.stddev)
