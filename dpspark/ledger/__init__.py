"""Persistent privacy budget ledger: spend before reading data, never refund, exact basic composition."""

from dpspark.ledger.errors import (
    BudgetExceeded,
    BudgetNotConfigured,
    LedgerError,
    LedgerUnreadable,
    TotalMismatch,
    UnitMismatch,
)
from dpspark.ledger.store import (
    STATUS_FAILED,
    STATUS_RELEASED,
    STATUS_SPENT,
    Budget,
    Ledger,
    LedgerSummary,
    SpendRecord,
    check_dataset_id,
    unit_key,
    unit_words,
)

__all__ = [
    "STATUS_FAILED",
    "STATUS_RELEASED",
    "STATUS_SPENT",
    "Budget",
    "BudgetExceeded",
    "BudgetNotConfigured",
    "Ledger",
    "LedgerError",
    "LedgerSummary",
    "LedgerUnreadable",
    "SpendRecord",
    "TotalMismatch",
    "UnitMismatch",
    "check_dataset_id",
    "unit_key",
    "unit_words",
]
