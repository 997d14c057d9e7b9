"""Look counts up in a published release (numpy and pyarrow only: importing this never imports Spark).

>>> rel = open_release("out/release")          # doctest: +SKIP
>>> rel.count(42), rel.counts([1, 2, 3])       # doctest: +SKIP
>>> rel.estimate(42).condition                 # doctest: +SKIP
"""

from dpspark.lookup.describe import accuracy_text, privacy_text
from dpspark.lookup.open import BELOW_THRESHOLD, Estimate, KeyNotInUniverseError, ReleaseLookup, open_release
from dpspark.release.errors import ReleaseFormatError

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
