"""Look counts up in a published release (numpy and pyarrow only: importing this never imports Spark).

>>> rel = open_release("out/release")          # doctest: +SKIP
>>> rel.count(42), rel.counts([1, 2, 3])       # doctest: +SKIP
>>> rel.estimate(42).condition                 # doctest: +SKIP

Names load lazily: the sparse reader (:class:`ReleaseLookup`) lives in its family's folder and is imported
only when a sparse release is opened (or the name is used).
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "BELOW_THRESHOLD": "open",
    "Estimate": "open",
    "KeyNotInUniverseError": "keys",
    "ReleaseFormatError": "dpspark.release.errors",
    "ReleaseLookup": "dpspark.mechanisms.histogram.reader",
    "accuracy_text": "describe",
    "open_release": "open",
    "privacy_text": "describe",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = [
    "BELOW_THRESHOLD",
    "Estimate",
    "KeyNotInUniverseError",
    "ReleaseFormatError",
    "ReleaseLookup",
    "accuracy_text",
    "open_release",
    "privacy_text",
]
