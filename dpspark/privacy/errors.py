"""Errors of the privacy vocabulary (all derive from :class:`dpspark.errors.DPSparkError`)."""

from __future__ import annotations

from dpspark.errors import DPSparkError


class PrivacyError(DPSparkError, ValueError):
    """A privacy amount, relation or statement is invalid or cannot be used as asked."""


class IncompatibleMeasures(PrivacyError):
    """Two measures cannot be combined exactly (e.g. approximate DP with zCDP without a chosen delta)."""


class RelationError(PrivacyError):
    """A guarantee under one neighbour relation does not imply one under the requested relation."""


class BudgetExceeded(PrivacyError):
    """Spending this statement would take the composed total above the budget."""


class DescriptionError(PrivacyError):
    """A JSON description of a measure, relation or statement is malformed."""
