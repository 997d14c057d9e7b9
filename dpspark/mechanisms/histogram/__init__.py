"""Driver-side histogram algorithms of Balcer-Vadhan sections 5-6 and Appendix A.

All take the nonzero true counts as {0-based index: count} (or a pair of
arrays), the universe size |X|, the public bound n on the number of units, a
counting mechanism and a :class:`dpspark.rng.RandomSource`, and return a
:class:`HistogramRelease` (partial vector ascending by index, with exact privacy
and accuracy statements). Neighbours: add/remove one unit, at most n units.
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "basic_histogram": "basic",
    "keepheavy_reference": "keepheavy",
    "keepheavy_simulation": "keepheavy",
    "pure_sparse_histogram": "pure_sparse",
    "random_histogram": "pure_sparse",
    "AccuracyStatement": "result",
    "HistogramRelease": "result",
    "PrivacyStatement": "result",
    "sparse_histogram": "sparse",
    "stability_histogram": "stability",
    "stability_mechanism": "stability",
    "stability_threshold": "stability",
}
__getattr__ = lazy_exports(__name__, _NAMES)
__all__ = [
    'AccuracyStatement',
    'HistogramRelease',
    'PrivacyStatement',
    'basic_histogram',
    'keepheavy_reference',
    'keepheavy_simulation',
    'pure_sparse_histogram',
    'random_histogram',
    'sparse_histogram',
    'stability_histogram',
    'stability_mechanism',
    'stability_threshold',
]
