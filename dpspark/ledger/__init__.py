"""Persistent privacy budget ledger: spend before reading data, never refund; exact zCDP and basic composition,
per-principal and per-query limits."""

from dpspark.ledger.errors import (
    BudgetExceeded,
    BudgetNotConfigured,
    LedgerError,
    LedgerUnreadable,
    TotalMismatch,
    UnitMismatch,
)
from dpspark.ledger.principal import PRINCIPAL_ENV, check_principal, resolve_principal
from dpspark.ledger.store import (
    ANY_PRINCIPAL,
    STATUS_FAILED,
    STATUS_RELEASED,
    STATUS_SPENT,
    Budget,
    Ledger,
    LedgerSummary,
    PrincipalSummary,
    SpendRecord,
    check_dataset_id,
    unit_key,
    unit_words,
)

__all__ = [
    "ANY_PRINCIPAL",
    "PRINCIPAL_ENV",
    "PrincipalSummary",
    "check_principal",
    "resolve_principal",
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
