"""DP SQL: BigQuery's ``SELECT WITH DIFFERENTIAL_PRIVACY`` compiled to the existing families (docs/sql.md).

:mod:`.dialect` parses (sqlglot, strictly), :mod:`.query` checks (refusing every unsupported construct by
name), :mod:`.where` turns WHERE into the filter grammar, :mod:`.options` maps OPTIONS, and :mod:`.compile`
makes the ``Session.groups`` (or answers) call. No SQL text ever reaches an engine. The faces above
(:mod:`dpspark.api`, :mod:`dpspark.cli`) run the call.
"""

from dpspark.sql.compile import SqlCall, compile_query, key_universe
from dpspark.sql.errors import SqlError
from dpspark.sql.query import DPQuery, check_query

__all__ = ["DPQuery", "SqlCall", "SqlError", "check_query", "compile_query", "key_universe"]
