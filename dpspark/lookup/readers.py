"""Release kinds -> the lookup class that opens one. :func:`dpspark.lookup.open_release` dispatches here.

Each class is imported only when a release of its kind is opened, so opening a sparse release never
loads the GF(2^m) kernels, and opening a compact one never loads the sparse histogram code or Spark.
"""

from __future__ import annotations

from typing import Any

from dpspark._lazy import LazyRegistry
from dpspark.release.errors import ReleaseFormatError

_READERS = LazyRegistry(
    {
        "sparse": "dpspark.lookup.open:ReleaseLookup",
        "compact": "dpspark.mechanisms.compact.reader:CompactReleaseLookup",
        "answers": "dpspark.mechanisms.answers.reader:AnswersLookup",
        "sample": "dpspark.mechanisms.samplers.reader:SampleLookup",
        "distribution": "dpspark.mechanisms.product.reader:DistributionLookup",
        "gaussian_model": "dpspark.mechanisms.gaussian_model.reader:GaussianModelLookup",
    },
    lambda kind: ReleaseFormatError(f"manifest.json: unknown release kind {kind!r}"),
)


def register_reader(kind: str, cls: Any) -> None:
    """Register the lookup class of release kind ``kind`` (called as ``cls(root, manifest=, verify=, limits=)``)."""
    _READERS.register(kind, cls)


def reader_for(kind: str, where: str = "manifest.json") -> Any:
    """The lookup class of release kind ``kind``; an unknown kind is a :class:`ReleaseFormatError` naming ``where``."""
    try:
        return _READERS.get(kind)
    except ReleaseFormatError:
        raise ReleaseFormatError(f"{where}: unknown release kind {kind!r}") from None
