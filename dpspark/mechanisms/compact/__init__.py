"""CompactHistogram (Balcer-Vadhan section 8): a degree-n polynomial over GF(2^m) as the release.

See :mod:`dpspark.mechanisms.compact.algorithm` for the algorithm and its privacy claim,
:mod:`dpspark.mechanisms.compact.empty_bin` for the empty-bin samplers G and
:mod:`dpspark.mechanisms.compact.rebuild` for what a reader needs.
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "conditioned_polynomial": "construct",
    "draw_targets": "construct",
    "points_of_indexes": "construct",
    "compact_histogram": "algorithm",
    "lookup_many": "algorithm",
    "evaluate": "evaluation",
    "lookup": "evaluation",
    "SUPPORTED_M": "parameters",
    "choose_field_degree": "parameters",
    "compact_mechanism": "parameters",
    "make_sampler": "parameters",
    "simultaneous_gamma": "parameters",
    "CompactPrivacy": "privacy",
    "compact_accuracy": "privacy",
    "compact_privacy": "privacy",
    "CompactRelease": "rebuild",
    "mechanism_parameters": "rebuild",
    "rebuild_mechanism": "rebuild",
    "rebuild_sampler": "rebuild",
    "BlockSampler": "empty_bin",
    "EmptyBinSampler": "empty_bin",
    "RoundedCdfSampler": "empty_bin",
    "min_scaled_pmf_at_zero": "empty_bin",
}
__getattr__ = lazy_exports(__name__, _NAMES)
__all__ = [
    'BlockSampler',
    'CompactPrivacy',
    'CompactRelease',
    'EmptyBinSampler',
    'RoundedCdfSampler',
    'SUPPORTED_M',
    'choose_field_degree',
    'compact_accuracy',
    'compact_histogram',
    'compact_mechanism',
    'compact_privacy',
    'conditioned_polynomial',
    'draw_targets',
    'evaluate',
    'lookup',
    'lookup_many',
    'make_sampler',
    'mechanism_parameters',
    'min_scaled_pmf_at_zero',
    'points_of_indexes',
    'rebuild_mechanism',
    'rebuild_sampler',
    'simultaneous_gamma',
]
