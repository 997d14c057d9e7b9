"""The one error of the SQL front end: a query outside the supported subset, refused before any spend."""

from __future__ import annotations

from dpspark.errors import DPSparkError


class SqlError(DPSparkError, ValueError):
    """A query dpspark does not run: the message names the clause and says what to write instead.

    Raised while the query is parsed, checked or compiled: before any data is read or any budget is spent.
    It quotes the query's own text (public: the analyst wrote it), never a data value.
    """
