"""One base class for every error a dpspark user can cause or fix.

Every user-facing exception derives from :class:`DPSparkError`; most also keep
a standard second base (``ValueError``, ``OSError``, ...) because callers rely
on it. The command line catches only :class:`DPSparkError`, so a programming
bug surfaces as a traceback instead of looking like bad input.
"""

from __future__ import annotations


class DPSparkError(Exception):
    """Base of every user-facing dpspark error: bad input, refused budget, unreadable release, ..."""


class ParameterError(DPSparkError, ValueError):
    """A public parameter or argument is invalid: an unreadable or out-of-range epsilon, beta, n, path, key, ..."""


class ParameterTypeError(DPSparkError, TypeError):
    """A public parameter has the wrong type, e.g. a float where an exact value is required (ground rule 1)."""


class ValueFreeError(DPSparkError):
    """An error raised during a data pass whose text is built from public parameters only, by construction.

    Such an error is the answer to a curator-side check the config asked for (``on_excess_units = "refuse"``):
    it passes a data pass with its own text (:mod:`dpspark.engine.data_pass`), re-raised fresh, without the
    original's frames. Never give a subclass a message that holds a data value.
    """
