"""dpspark's privacy vocabulary: exact measures, neighbour relations, conversions, composition, statements.

Derivations of every conversion and composition rule: docs/privacy.md.

* Amounts: :class:`LogEpsilon` (eps = ln(exp) + extra, exact), Fractions for delta and rho.
* Measures: :class:`PureDP`, :class:`ApproxDP`, :class:`ZCDP`.
* Relations: :class:`AddRemove` (primary), :class:`Substitute`, :class:`Unbounded`.
* Conversions: :func:`pure_to_zcdp`, :func:`zcdp_to_approx_dp` (Bun-Steinke),
  :func:`zcdp_to_approx_dp_cks` (Canonne-Kamath-Steinke), :func:`group_privacy`,
  :func:`convert_relation`, :func:`truncation_to_unbounded`.
* Composition: :func:`compose` (sequential), :func:`parallel` (disjoint batches).
* Statements: :class:`PrivacyStatement`, :class:`AccuracyStatement` / :class:`AccuracyClaim`.
* Budget: :class:`Budget` (spend by exact composition; :class:`BudgetExceeded`).
"""

from dpspark.privacy.accuracy import ABS_ERROR, TV_DISTANCE, AccuracyClaim, AccuracyStatement
from dpspark.privacy.budget import Budget
from dpspark.privacy.composition import compose, parallel
from dpspark.privacy.conversions import (
    DEFAULT_BITS,
    cks_alpha,
    cks_epsilon_upper,
    convert_relation,
    group_privacy,
    pure_to_zcdp,
    truncation_to_unbounded,
    zcdp_to_approx_dp,
    zcdp_to_approx_dp_cks,
)
from dpspark.privacy.epsilon import LogEpsilon
from dpspark.privacy.errors import BudgetExceeded, DescriptionError, IncompatibleMeasures, PrivacyError, RelationError
from dpspark.privacy.measures import ApproxDP, Measure, PureDP, ZCDP, measure_from_budget, measure_from_description
from dpspark.privacy.relations import AddRemove, Relation, Substitute, Unbounded, relation_from_description, steps
from dpspark.privacy.statement import PrivacyStatement, compose_statements, parallel_statements, truncated_statement

__all__ = [
    "ABS_ERROR", "TV_DISTANCE", "AccuracyClaim", "AccuracyStatement",
    "Budget", "BudgetExceeded",
    "compose", "parallel",
    "DEFAULT_BITS", "cks_alpha", "cks_epsilon_upper", "convert_relation", "group_privacy", "pure_to_zcdp",
    "truncation_to_unbounded", "zcdp_to_approx_dp", "zcdp_to_approx_dp_cks",
    "LogEpsilon",
    "DescriptionError", "IncompatibleMeasures", "PrivacyError", "RelationError",
    "ApproxDP", "Measure", "PureDP", "ZCDP", "measure_from_budget", "measure_from_description",
    "AddRemove", "Relation", "Substitute", "Unbounded", "relation_from_description", "steps",
    "PrivacyStatement", "compose_statements", "parallel_statements", "truncated_statement",
]
