"""Exceptions of the universe package.

Messages name the universe (kind and column) and say why a value was refused;
they never contain the raw key value, which may be private data.
"""

from __future__ import annotations

from dpspark.errors import DPSparkError


class UniverseConfigError(DPSparkError, ValueError):
    """A universe specification is invalid (unknown kind, missing field, bad bounds, too large)."""


class OutOfUniverseError(DPSparkError, ValueError):
    """A key is null, of the wrong type, or not a member of the universe."""


class KeyTypeError(DPSparkError, TypeError):
    """A key column's Arrow or Spark type does not fit the universe (e.g. strings for an ``int_range``)."""
