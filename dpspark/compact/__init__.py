"""CompactHistogram (Balcer-Vadhan section 8): a degree-n polynomial over GF(2^m) as the release.

See :mod:`dpspark.compact.histogram` for the algorithm and its privacy claim,
:mod:`dpspark.compact.samplers` for the empty-bin samplers G and
:mod:`dpspark.compact.release` for what a reader needs.
"""

from dpspark.compact.construct import conditioned_polynomial, draw_targets, points_of_indexes
from dpspark.compact.histogram import compact_histogram, lookup_many
from dpspark.compact.lookup import evaluate, lookup
from dpspark.compact.parameters import (
    SUPPORTED_M,
    choose_field_degree,
    compact_mechanism,
    make_sampler,
    simultaneous_gamma,
)
from dpspark.compact.privacy import CompactPrivacy, compact_accuracy, compact_privacy
from dpspark.compact.release import CompactRelease, mechanism_parameters, rebuild_mechanism, rebuild_sampler
from dpspark.compact.samplers import BlockSampler, EmptyBinSampler, RoundedCdfSampler, min_scaled_pmf_at_zero

__all__ = [
    "SUPPORTED_M",
    "BlockSampler",
    "CompactPrivacy",
    "CompactRelease",
    "EmptyBinSampler",
    "RoundedCdfSampler",
    "choose_field_degree",
    "compact_accuracy",
    "compact_histogram",
    "compact_mechanism",
    "compact_privacy",
    "conditioned_polynomial",
    "draw_targets",
    "evaluate",
    "lookup",
    "lookup_many",
    "make_sampler",
    "mechanism_parameters",
    "min_scaled_pmf_at_zero",
    "points_of_indexes",
    "rebuild_mechanism",
    "rebuild_sampler",
    "simultaneous_gamma",
]
