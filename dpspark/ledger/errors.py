"""Errors raised by the privacy budget ledger.

Messages name the ledger file and the dataset id (public, declared by the
operator) and state exact budget amounts; they never contain data values.
"""

from __future__ import annotations

from fractions import Fraction

from dpspark.errors import DPSparkError


class LedgerError(DPSparkError, RuntimeError):
    """Base class of every ledger failure."""


class LedgerUnreadable(LedgerError):
    """The ledger file is missing, corrupt, not a dpspark ledger, or holds malformed rows."""


class BudgetNotConfigured(LedgerError):
    """A spend was attempted on a dataset without a configured total budget."""


class BudgetExceeded(LedgerError):
    """A spend would take the dataset over its total budget; nothing was recorded."""

    def __init__(
        self,
        dataset_id: str,
        requested: tuple[Fraction, Fraction],
        remaining: tuple[Fraction, Fraction],
        total: tuple[Fraction, Fraction],
    ) -> None:
        self.dataset_id = dataset_id
        self.requested = requested
        self.remaining = remaining
        self.total = total
        eps_r, delta_r = requested
        eps_left, delta_left = remaining
        super().__init__(
            f"privacy budget exceeded for dataset {dataset_id!r}: this release asks for "
            f"epsilon = {eps_r}, delta = {delta_r}, but only epsilon = {eps_left}, delta = {delta_left} "
            f"is left of the total epsilon = {total[0]}, delta = {total[1]} "
            "(basic composition; spent budget is never refunded). Nothing was read or recorded."
        )
