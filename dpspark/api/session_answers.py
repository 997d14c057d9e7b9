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
  :mod:`dpspark.mechanisms.answers.mechanism`) and charges the session budget (and the ledger, if any) the
  (epsilon, delta) ONCE, before any data is read. DK's theorem (and zCDP composition for the Gaussian)
  covers k adaptively chosen queries, so the analyst may pick each query after seeing the previous answers.
* ``.answer(query)`` validates the query (the ``[[queries]]`` fields), refuses it before reading any data
  if it needs more scalar answers than are left (a noisy-count mean needs two), runs one pass over the
  data for its scalars, draws their noise and returns the answer (a dict of exact Fractions with R,
  bound95 or the conditional bound, each with a float beside it for reading: ``value_float``,
  ``R_float``...). A query refused before any data is read (a malformed query, a missing column or a
  column of the wrong type: schema only) uses no slot; from the data pass on, its slots and
  its name are used, whatever happens: a pass that fails raises the fixed, value-free
  :class:`~dpspark.engine.data_pass.DataPassError` and the slots stay spent (a failing probe is never free).
* k is at most :data:`MAX_ANSWERS`, checked before anything is allocated.
* Nothing is written to disk; ``.answered`` lists every answer so far, ``.statement`` the privacy. A ledger
  records the declaration as ``adaptive answers: k = ... scalars (...)`` (:func:`declaration_label`), not a path.
* The session budget and the ledger's refusals are checked before the noise is calibrated (which can take a
  minute at large k): a declaration the budget cannot pay is refused at once.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.api.charge import Charge
    from dpspark.engine.spec import ReleaseSpec
    from dpspark.rng import RandomSource


#: the most scalar answers one declaration may hold (stated before anything is allocated)
MAX_ANSWERS = 100_000


class AnswerBudgetExhausted(DPSparkError, ValueError):
    """More scalar answers were asked for than the k declared up front (nothing was read)."""


class AnswersSession(Protocol):
    """What adaptive answers need of a :class:`dpspark.Session`: its spec builder, its charge and its input."""

    rng: "RandomSource | None"
    progress: Callable[[str], None]
    show_data_errors: bool

    def spec(self, *, mechanism: str, epsilon: Any, output: Any = None, sections: Mapping[str, Any] | None = None,
             certify: bool = True, **privacy: Any) -> "ReleaseSpec":
        """The validated spec of a release over this session's data."""

    def charge_for(self, spec: "ReleaseSpec") -> "Charge":
        """The budget charge of ``spec`` (session budget and ledger)."""

    def arrow_source(self) -> Any:
        """The input for the Arrow engine (a table or a local path), or None for Spark."""

    def frame(self) -> "DataFrame":
        """The input as a Spark DataFrame."""

    def text_input(self) -> bool:
        """True when the input's column types come from the data (CSV/JSON)."""


class AdaptiveAnswers:
    """k adaptively chosen queries against one session's data (see the module docstring)."""

    def __init__(self, session: AnswersSession, *, k: int, mechanism: str, epsilon: Any, delta: Any,
                 **privacy: Any) -> None:
        from dpspark.mechanisms.answers.mechanism import AnswersMechanism

        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_ANSWERS:
            raise AnswerBudgetExhausted(f"k (the number of scalar answers) must be an int in [1, {MAX_ANSWERS}], "
                                        f"got {k!r}")
        placeholder = [{"name": f"slot{i}", "kind": "count"} for i in range(k)]  # k unit-sensitivity slots
        label = declaration_label(k, mechanism)
        spec = session.spec(mechanism=mechanism, epsilon=epsilon, delta=delta, output=label,
                            sections={"queries": placeholder}, certify=False, **privacy)
        # nothing is written: the ledger records the declaration by this label, not a (deleted) scratch folder
        self.spec = dataclasses.replace(spec, output=Path(label))
        # The budgets first (the session's, then the ledger's refusals): both need only the configured
        # (epsilon, delta), and the noise's calibration below can take a minute at large k.
        from dpspark.engine.checks import check_ledger

        session.charge_for(self.spec).check()
        check_ledger(self.spec)
        from dpspark.engine.plan import plan_release

        arrow = session.arrow_source()
        plan = plan_release(self.spec, have_spark=arrow is None, given_table=arrow is not None)  # built once
        mech = plan.mechanism
        if not isinstance(mech, AnswersMechanism):
            raise AnswerBudgetExhausted(f"mechanism {mechanism!r} does not answer queries; use 'bounded_noise' or "
                                        "'gaussian'")
        self.mechanism = mech
        self.k = k
        self.session = session
        spent = session.charge_for(self.spec)(plan)  # once, for all k: the ledger's refusal comes first
        if spent is not None:
            spent[0].mark_released(spent[1].id)
        record_declaration(session, label)
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
        from dpspark.mechanisms.answers.queries import QueryError, parse_query

        q = parse_query(dict(query), len(self.answered))
        if q.name in self._names:
            raise QueryError(f"query name {q.name!r} was already answered in this session")
        need = len(q.scalars())
        if need > self.remaining:
            raise AnswerBudgetExhausted(
                f"query {q.name!r} needs {need} scalar answer(s) but only {self.remaining} of the declared "
                f"k = {self.k} are left; nothing was read")
        context = self._context(q)  # opens the input (metadata only) and checks the query's columns
        # charge first: the slots and the name are used from here on, whatever the data pass does
        self.used += need
        self._names.add(q.name)
        from dpspark.engine.data_pass import run_data_pass

        totals = run_data_pass(lambda: self.mechanism.totals(context(), q.scalars()),
                               show_data_errors=self.session.show_data_errors)
        out = with_floats(self.mechanism.answer_totals(totals, self.rng, [q])[0])
        self.answered.append(out)
        return out

    def _context(self, q: Any) -> Any:
        """A function that opens the engine context for ``q``, after the query's schema check (metadata only)."""
        s = self.session
        arrow = s.arrow_source()  # filters are the dpspark grammar: both engines
        if arrow is not None:
            from dpspark.engine.arrow.backend import ArrowBackend
            from dpspark.engine.checks import check_table_schema

            check_table_schema(_QueryCheck(self.mechanism, q), arrow)
            return lambda: ArrowBackend(arrow, self.rng, s.progress)
        from dpspark.engine.checks import check_input_schema, frame_schema
        from dpspark.engine.spark.backend import SparkBackend

        frame = s.frame()
        check_input_schema(_QueryCheck(self.mechanism, q), frame_schema(frame), "the session's DataFrame",
                           text_input=s.text_input())
        return lambda: SparkBackend(frame, self.rng, s.progress)


def declaration_label(k: int, mechanism: str) -> str:
    """What the ledger records for a declaration of k adaptive answers (its "release path"): no file is
    written, and the queries are chosen after the spend, so the record names the declaration itself."""
    return f"adaptive answers: k = {k} scalars ({mechanism}), declared in a dpspark.Session; nothing written"


def record_declaration(session: Any, label: str) -> None:
    """Note a charged declaration on the session (``session.declared_answers``), so its summary can tell charges
    that made a release from declarations and from releases that failed after their charge."""
    declared = getattr(session, "declared_answers", None)
    if declared is None:
        declared = []
        setattr(session, "declared_answers", declared)
    declared.append(label)


def with_floats(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` with ``<key>_float`` beside every exact Fraction (``value`` -> ``value_float``), for reading.

    The floats are reports of the exact values (post-processing); the Fractions stay the answer.
    """
    from fractions import Fraction

    out: dict[str, Any] = {}
    for key, value in answer.items():
        out[key] = value
        if isinstance(value, Fraction):
            out[f"{key}_float"] = float(value)  # report
    return out


class _QueryCheck:
    """The schema check of one adaptive query: the answers mechanism's check, for this query alone."""

    def __init__(self, mechanism: Any, query: Any) -> None:
        self.mechanism, self.query = mechanism, query

    def input_columns(self) -> tuple[str, ...]:
        """The columns the query reads (its column, its filter's columns and the unit column)."""
        unit = self.mechanism.spec.unit_column
        cols = [c for s in self.query.scalars() for c in s.columns()] + ([unit] if unit else [])
        return tuple(dict.fromkeys(cols))

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Why the query cannot be read from an input of this schema (None: it can)."""
        return self.mechanism.query_schema_problem(self.query, schema, text_input=text_input)
