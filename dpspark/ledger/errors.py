"""Errors raised by the privacy budget ledger.

Messages name the ledger file and the dataset id (public, declared by the
operator) and state exact budget amounts; they never contain data values.
"""

from __future__ import annotations

from typing import Any

from dpspark.errors import DPSparkError


class LedgerError(DPSparkError, RuntimeError):
    """Base class of every ledger failure."""


class LedgerUnreadable(LedgerError):
    """The ledger file is missing, corrupt, not a dpspark ledger, or holds malformed rows."""


class BudgetNotConfigured(LedgerError):
    """A spend was attempted on a dataset without a configured total budget."""


class TotalMismatch(LedgerError):
    """A config names a total budget that differs from the ledger's; nothing was spent or changed."""


class UnitMismatch(LedgerError):
    """A spend names a privacy unit other than the one pinned for the dataset; nothing was spent."""


class BudgetExceeded(LedgerError):
    """A spend would take the dataset (or its principal) over a total, or over the per-query limit; nothing
    was recorded. The message states budget amounts only, never a data value."""

    def __init__(self, dataset_id: str, reason: str, principal: str | None = None, *,
                 requested: tuple[Any, ...] | None = None, remaining: tuple[Any, ...] | None = None,
                 total: tuple[Any, ...] | None = None) -> None:
        self.dataset_id = dataset_id
        self.principal = principal
        self.reason = reason
        #: exact (epsilon, delta) of the spend, of what is left (epsilon at the total's delta; delta not yet spent
        #: by (epsilon, delta) releases) and of the total; (rho,) each for a total declared in rho
        self.requested = requested
        self.remaining = remaining
        self.total = total
        who = f" (principal {principal!r})" if principal else ""
        super().__init__(
            f"privacy budget exceeded for dataset {dataset_id!r}{who}: {reason}. Spent budget is never refunded. "
            "Nothing was read or recorded."
        )
