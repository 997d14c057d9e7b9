"""Adaptive query answering in a :class:`dpspark.Session`: declare k up front, then ask one query at a time.

>>> with dpspark.Session(df, max_units=10**6, budget={"epsilon": "1", "delta": "1e-6"}) as s:  # doctest: +SKIP
...     a = s.answers(k=20, mechanism="bounded_noise", epsilon="1", delta="1e-6")
...     first = a.answer({"name": "n", "kind": "count"})
...     if first["value"] > 1000:       # the next query may depend on the last answer
...         a.answer({"name": "m", "kind": "mean", "column": "age", "lo": "0", "hi": "120", "n": 10**6})
...     a.remaining                      # scalar answers left of the declared k

Design (small on purpose):

* ``Session.answers(k, mechanism, epsilon, delta, ...)`` calibrates the noise for k adaptive 1-sensitive
  scalar answers (the same law an ``answers`` batch release of k scalars uses,
  :mod:`dpspark.mechanisms.answers`) and charges the session budget (and the ledger, if any) the
  (epsilon, delta) ONCE, before any data is read. DK's theorem (and zCDP composition for the Gaussian)
  covers k adaptively chosen queries, so the analyst may pick each query after seeing the previous answers.
* ``.answer(query)`` validates the query (the ``[[queries]]`` fields), refuses it before reading any data
  if it needs more scalar answers than are left (a noisy-count mean needs two), runs one pass over the
  data for its scalars, draws their noise and returns the answer (a dict of exact Fractions with R,
  bound95 or the conditional bound). A query that fails before its noise is drawn (a missing column, a
  bad filter) uses no slot.
* Nothing is written to disk; ``.answered`` lists every answer so far, ``.statement`` the privacy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.session import Session


class AnswerBudgetExhausted(DPSparkError, ValueError):
    """More scalar answers were asked for than the k declared up front (nothing was read)."""


class AdaptiveAnswers:
    """k adaptively chosen queries against one session's data (see the module docstring)."""

    def __init__(self, session: "Session", *, k: int, mechanism: str, epsilon: Any, delta: Any,
                 **privacy: Any) -> None:
        from dpspark.mechanisms.answers import AnswersMechanism
        from dpspark.session import SessionBudgetExceeded

        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise AnswerBudgetExhausted(f"k (the number of scalar answers) must be an int >= 1, got {k!r}")
        placeholder = [{"name": f"slot{i}", "kind": "count"} for i in range(k)]  # k unit-sensitivity slots
        self.spec = session.spec(mechanism=mechanism, epsilon=epsilon, delta=delta,
                                 sections={"queries": placeholder}, **privacy)
        mech = self.spec.mechanism_object()
        if not isinstance(mech, AnswersMechanism):
            raise AnswerBudgetExhausted(f"mechanism {mechanism!r} does not answer queries; use 'bounded_noise' or "
                                        "'gaussian'")
        self.mechanism = mech
        self.k = k
        self.session = session
        statement = session._statement(self.spec)
        if session.budget is not None and not session.budget.can_spend(statement):
            raise SessionBudgetExceeded(
                f"k = {k} answers ({statement.measure.text()}) exceed the session budget left: "
                f"{session.budget.remaining.text()}; nothing was read and nothing was spent")
        if session.budget is not None:
            session.budget.spend(statement)  # once, for all k answers; never refunded
        from dpspark.job import spend_budget

        spent = spend_budget(self.spec)  # the ledger, if any: also once
        if spent is not None:
            spent[0].mark_released(spent[1].id)
        from dpspark.rng import default_source

        self.rng = session.rng or default_source()
        self.used = 0
        self.answered: list[dict[str, Any]] = []
        self._names: set[str] = set()

    @property
    def remaining(self) -> int:
        """Scalar answers left of the declared k."""
        return self.k - self.used

    @property
    def statement(self) -> Any:
        """The privacy statement of all k answers (add/remove of one unit)."""
        return self.mechanism.statement()

    def answer(self, query: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one query (one pass over the data); refuses, before reading, when too few slots are left."""
        from dpspark.mechanisms.answers_queries import QueryError, parse_query

        q = parse_query(dict(query), len(self.answered))
        if q.name in self._names:
            raise QueryError(f"query name {q.name!r} was already answered in this session")
        need = len(q.scalars())
        if need > self.remaining:
            raise AnswerBudgetExhausted(
                f"query {q.name!r} needs {need} scalar answer(s) but only {self.remaining} of the declared "
                f"k = {self.k} are left; nothing was read")
        if self.mechanism.spec.max_units * max(s.delta for s in q.scalars()) >= 10**38:
            raise QueryError(f"query {q.name!r}: max_units x its clip bound exceeds decimal(38,0)")
        totals = self.mechanism.totals(self._context(q), q.scalars())
        self.used += need  # from here the noise is drawn: the slots are spent
        out = self.mechanism.answer_totals(totals, self.rng, [q])[0]
        self._names.add(q.name)
        self.answered.append(out)
        return out

    def _context(self, q: Any) -> Any:
        s = self.session
        arrow = s._arrow_source() if q.filter is None else None  # filters are Spark SQL: Spark only
        if arrow is not None:
            from dpspark.engine.arrow_backend import ArrowContext

            return ArrowContext(arrow, self.rng, s.progress)
        from dpspark.engine.context import SparkContext

        return SparkContext(s._frame(), self.rng, s.progress)
