"""The engine's value-free errors: the input does not fit the config, or the data breaks a declared bound."""

from __future__ import annotations

from dpspark.errors import DPSparkError, ValueFreeError


class CuratorError(ValueFreeError, ValueError):
    """The data breaks a declared public bound (e.g. more units than max_units with on_excess_units = "refuse").

    Its text names public parameters only (a :class:`~dpspark.errors.ValueFreeError`).
    """


class InputError(DPSparkError, ValueError):
    """The input does not match the config (missing column, unreadable path, too many units)."""
