"""Driver-side histogram algorithms of Balcer-Vadhan sections 5-6 and Appendix A.

All take the nonzero true counts as {0-based index: count} (or a pair of
arrays), the universe size |X|, the public bound n on the number of units, a
counting mechanism and a :class:`dpspark.rng.RandomSource`, and return a
:class:`HistogramRelease` (partial vector ascending by index, with exact privacy
and accuracy statements). Neighbours: add/remove one unit, at most n units.
"""

from dpspark.histogram.basic import basic_histogram
from dpspark.histogram.keepheavy import keepheavy_reference, keepheavy_simulation
from dpspark.histogram.pure_sparse import pure_sparse_histogram, random_histogram
from dpspark.histogram.result import AccuracyStatement, HistogramRelease, PrivacyStatement
from dpspark.histogram.sparse import sparse_histogram
from dpspark.histogram.stability import stability_histogram, stability_mechanism, stability_threshold

__all__ = [
    "AccuracyStatement",
    "HistogramRelease",
    "PrivacyStatement",
    "basic_histogram",
    "keepheavy_reference",
    "keepheavy_simulation",
    "pure_sparse_histogram",
    "random_histogram",
    "sparse_histogram",
    "stability_histogram",
    "stability_mechanism",
    "stability_threshold",
]
