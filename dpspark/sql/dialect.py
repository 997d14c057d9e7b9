"""BigQuery's SQL with its differential-privacy clause, parsed by sqlglot into one tree (never leniently).

sqlglot's BigQuery dialect refuses ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...)`` and the DP named
argument ``SUM(x, contribution_bounds_per_group => (0, 50))``, and with ``error_level=IGNORE`` it silently
drops that argument. :class:`DPBigQuery` extends the dialect the documented way (a ``Dialect`` subclass with
its own ``Parser``):

* the clause right after ``SELECT`` becomes a :class:`DPClause` node in the ``Select``'s ``hint`` slot (the
  hook sqlglot calls at exactly that position), holding one ``name = value`` :class:`sqlglot.exp.EQ` per option;
* each DP aggregate (``COUNT``, ``SUM``, ``AVG``, ``VAR_POP``, ``STDDEV_POP``, ``PERCENTILE_CONT``) becomes a
  :class:`DPAggregate` holding every argument as parsed, named ones included (sqlglot's ``Kwarg``), so the
  checker sees all of them and refuses what it does not understand.

Parsing runs at ``ErrorLevel.IMMEDIATE``: the first error raises. The text is bounded by a public limit.
"""

from __future__ import annotations

from typing import Any

from sqlglot import ErrorLevel, exp
from sqlglot.dialects.bigquery import BigQuery
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from dpspark.sql.errors import SqlError

#: the longest query text accepted (a public limit: parsing time is linear in it)
MAX_QUERY_CHARS = 16_384
#: the aggregate functions a DP query may call (SQL name -> dpspark's kind)
AGGREGATES = {"COUNT": "count", "SUM": "sum", "AVG": "mean", "VAR_POP": "variance", "STDDEV_POP": "stddev",
              "PERCENTILE_CONT": "quantile"}


class DPClause(exp.Expression):
    """``WITH DIFFERENTIAL_PRIVACY OPTIONS (name = value, ...)``: ``expressions`` are the ``EQ`` nodes."""

    arg_types = {"expressions": True}


class DPAggregate(exp.Expression, exp.AggFunc):
    """A DP aggregate call: ``this`` is the upper-case function name (a ``Var``), ``expressions`` its arguments."""

    arg_types = {"this": True, "expressions": False}
    is_var_len_args = True

    @property
    def function(self) -> str:
        """The function's upper-case SQL name."""
        return str(self.this.name)


def _builder(name: str) -> Any:
    def build(args: list[Any]) -> DPAggregate:
        return DPAggregate(this=exp.Var(this=name), expressions=list(args))
    return build


class DPParser(BigQuery.Parser):
    """BigQuery's parser plus the DP clause and the DP aggregates (module docstring)."""

    FUNCTIONS = {**BigQuery.Parser.FUNCTIONS, **{name: _builder(name) for name in AGGREGATES}}

    def _parse_hint(self) -> Any:
        """After ``SELECT``: the DP clause, else BigQuery's own hint."""
        if (self._curr is not None and self._curr.token_type == TokenType.WITH and self._next is not None
                and self._next.text.upper() == "DIFFERENTIAL_PRIVACY"):
            self._advance(2)
            if not self._match_text_seq("OPTIONS"):
                self.raise_error("expected OPTIONS (...) after WITH DIFFERENTIAL_PRIVACY")
            options = self._parse_wrapped_csv(self._parse_assignment)
            return DPClause(expressions=options)
        return super()._parse_hint()


class DPGenerator(BigQuery.Generator):
    """Prints the DP nodes back as BigQuery writes them (for messages that quote the query)."""

    TRANSFORMS = {
        **BigQuery.Generator.TRANSFORMS,
        DPAggregate: lambda self, e: self.func(e.function, *e.expressions),
        DPClause: lambda self, e: f" WITH DIFFERENTIAL_PRIVACY OPTIONS ({self.expressions(e, flat=True)})",
    }


class DPBigQuery(BigQuery):
    """The BigQuery dialect with its differential-privacy clause (module docstring)."""

    Parser = DPParser
    Generator = DPGenerator


def parse_query(text: Any) -> exp.Expr:
    """Parse one query strictly; :class:`SqlError` (naming sqlglot's message) for anything it cannot parse."""
    if not isinstance(text, str) or not text.strip():
        raise SqlError("a query must be a non-empty string")
    if len(text) > MAX_QUERY_CHARS:
        raise SqlError(f"the query is longer than {MAX_QUERY_CHARS} characters")
    message = None
    try:
        trees = DPBigQuery().parse(text, error_level=ErrorLevel.IMMEDIATE)
    except SqlglotError as err:
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
    except RecursionError:
        message = "the query nests too deeply"
    if message is not None:  # outside the except block: no chained parser internals
        raise SqlError(f"the query does not parse: {message}")
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise SqlError("give exactly one SELECT statement (no ';'-separated list)")
    return trees[0]
