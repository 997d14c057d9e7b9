"""Who a spend is charged to: the principal (an analyst's name), from the caller, else ``$DPSPARK_PRINCIPAL``.

A principal is an accounting label, not an authentication: whoever can write the ledger file can name any
principal, so per-principal limits share a dataset's total among cooperating analysts (like BigQuery's
per-subscriber budgets) and the file's permissions stay the access control. A spend without a principal
counts toward the dataset's total only, and a dataset with per-principal limits refuses it.
"""

from __future__ import annotations

import os
import re

from dpspark.errors import ParameterError

PRINCIPAL_ENV = "DPSPARK_PRINCIPAL"
#: principal names: 1-100 chars, letters, digits and ``._:@+-``, starting with a letter or digit
PRINCIPAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,99}$")


def check_principal(name: object) -> str:
    """Validate a principal's name (see :data:`PRINCIPAL`)."""
    if not isinstance(name, str) or not PRINCIPAL.match(name):
        raise ParameterError(
            "a principal is an analyst's name of 1-100 characters from [A-Za-z0-9._:@+-] starting with a letter "
            "or digit (e.g. alice or alice@example.com)")
    return name


def resolve_principal(explicit: str | None = None) -> str | None:
    """The principal of a charge: ``explicit`` (CLI ``--principal``, ``Session(principal=...)``), else
    ``$DPSPARK_PRINCIPAL``, else None (unnamed)."""
    if explicit is not None:
        return check_principal(explicit)
    env = os.environ.get(PRINCIPAL_ENV)
    return check_principal(env) if env else None
