"""Black-box privacy auditing: neighbour-pair audits with Clopper-Pearson bounds, a sample-size
planner, step-count instrumentation for timing side channels, and a leak scan.

Floats appear here only in analysis (confidence bounds, plans); nothing in this
package decides a released value.
"""

from dpspark.audit.auditor import (
    FALSE_ALARM,
    AuditVerdict,
    Evidence,
    PrivacyViolation,
    alpha_per_bound,
    audit,
    evaluate_counts,
    sample_event_counts,
)
from dpspark.audit.claims import Claim, check_neighbours
from dpspark.audit.clopper_pearson import beta_quantile, betainc, cp_lower, cp_upper
from dpspark.audit.events import (
    Event,
    complement,
    count_at_least,
    field_value_in,
    key_appears,
    length_at_least,
    length_equals,
    predicate,
    released_mapping,
    value_at_least,
    value_at_most,
    value_equals,
)
from dpspark.audit.compact_law import (
    CompactView,
    LawPiece,
    ToyCompactRelease,
    ToyField,
    event_probability,
    exact_new_bin_ratios,
    field_value_law,
    toy_compact_histogram,
)
from dpspark.audit.leaks import Leak, assert_no_leaks, blobs_from_paths, find_leaks
from dpspark.audit.planner import SamplePlan, plan_for_loss, plan_runs
from dpspark.audit.pipelines import (
    basic_pipeline,
    compact_pipeline,
    counting_pipeline,
    job_driver,
    on_output,
    pure_sparse_pipeline,
    spark_pipeline,
    sparse_pipeline,
    stability_pipeline,
    toy_compact_pipeline,
)
from dpspark.audit.timing import CountingRandom, StepBounds, count_calls, count_line_hits, histogram_step_bounds

__all__ = [
    "FALSE_ALARM",
    "AuditVerdict",
    "Claim",
    "CompactView",
    "LawPiece",
    "ToyCompactRelease",
    "ToyField",
    "CountingRandom",
    "Event",
    "Evidence",
    "Leak",
    "PrivacyViolation",
    "SamplePlan",
    "StepBounds",
    "alpha_per_bound",
    "assert_no_leaks",
    "audit",
    "basic_pipeline",
    "beta_quantile",
    "blobs_from_paths",
    "betainc",
    "check_neighbours",
    "compact_pipeline",
    "complement",
    "count_at_least",
    "count_calls",
    "count_line_hits",
    "counting_pipeline",
    "cp_lower",
    "cp_upper",
    "evaluate_counts",
    "event_probability",
    "exact_new_bin_ratios",
    "field_value_in",
    "field_value_law",
    "find_leaks",
    "histogram_step_bounds",
    "job_driver",
    "on_output",
    "key_appears",
    "length_at_least",
    "length_equals",
    "plan_for_loss",
    "plan_runs",
    "predicate",
    "pure_sparse_pipeline",
    "released_mapping",
    "sample_event_counts",
    "spark_pipeline",
    "sparse_pipeline",
    "stability_pipeline",
    "toy_compact_histogram",
    "toy_compact_pipeline",
    "value_at_least",
    "value_at_most",
    "value_equals",
]
