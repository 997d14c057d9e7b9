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

from dpspark._lazy import lazy_exports

_NAMES = {
    "ABS_ERROR": "accuracy",
    "TV_DISTANCE": "accuracy",
    "AccuracyClaim": "accuracy",
    "AccuracyStatement": "accuracy",
    "Budget": "budget",
    "compose": "composition",
    "parallel": "composition",
    "DEFAULT_BITS": "conversions",
    "cks_alpha": "conversions",
    "cks_epsilon_upper": "conversions",
    "convert_relation": "conversions",
    "group_privacy": "conversions",
    "pure_to_zcdp": "conversions",
    "truncation_to_unbounded": "conversions",
    "zcdp_to_approx_dp": "conversions",
    "zcdp_to_approx_dp_cks": "conversions",
    "LogEpsilon": "epsilon",
    "BudgetExceeded": "errors",
    "DescriptionError": "errors",
    "IncompatibleMeasures": "errors",
    "PrivacyError": "errors",
    "RelationError": "errors",
    "ApproxDP": "measures",
    "Measure": "measures",
    "PureDP": "measures",
    "ZCDP": "measures",
    "measure_from_budget": "measures",
    "measure_from_description": "measures",
    "AddRemove": "relations",
    "Relation": "relations",
    "Substitute": "relations",
    "Unbounded": "relations",
    "relation_from_description": "relations",
    "steps": "relations",
    "PrivacyStatement": "statement",
    "compose_statements": "statement",
    "parallel_statements": "statement",
    "truncated_statement": "statement",
}
__getattr__ = lazy_exports(__name__, _NAMES)
__all__ = [
    'ABS_ERROR',
    'AccuracyClaim',
    'AccuracyStatement',
    'AddRemove',
    'ApproxDP',
    'Budget',
    'BudgetExceeded',
    'DEFAULT_BITS',
    'DescriptionError',
    'IncompatibleMeasures',
    'LogEpsilon',
    'Measure',
    'PrivacyError',
    'PrivacyStatement',
    'PureDP',
    'Relation',
    'RelationError',
    'Substitute',
    'TV_DISTANCE',
    'Unbounded',
    'ZCDP',
    'cks_alpha',
    'cks_epsilon_upper',
    'compose',
    'compose_statements',
    'convert_relation',
    'group_privacy',
    'measure_from_budget',
    'measure_from_description',
    'parallel',
    'parallel_statements',
    'pure_to_zcdp',
    'relation_from_description',
    'steps',
    'truncated_statement',
    'truncation_to_unbounded',
    'zcdp_to_approx_dp',
    'zcdp_to_approx_dp_cks',
]
