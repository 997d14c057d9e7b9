"""Release kinds -> the function that writes one. The job dispatches on a mechanism's ``release_kind`` here.

Every writer takes ``(out_path, *, release, universe, key_columns, config, input_description, rng_name,
created_utc)`` and writes the release directory atomically. Readers are registered in
:mod:`dpspark.lookup.readers`, manifest section codecs in :mod:`dpspark.release.sections`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dpspark._lazy import LazyRegistry

Writer = Callable[..., Path]

_WRITERS = LazyRegistry(
    {
        "sparse": "dpspark.mechanisms.histogram.writer:write_sparse_release",
        "compact": "dpspark.mechanisms.compact.writer:write_compact_release",
        "answers": "dpspark.release.statement_envelope:write_statement_release",
        "sample": "dpspark.release.statement_envelope:write_statement_release",
        "distribution": "dpspark.release.statement_envelope:write_statement_release",
        "gaussian_model": "dpspark.release.statement_envelope:write_statement_release",
    },
    lambda kind: ValueError(f"no writer is registered for release kind {kind!r}"),
)


def register_writer(kind: str, writer: Writer) -> None:
    """Register the writer of release kind ``kind``."""
    _WRITERS.register(kind, writer)


def writer_for(kind: str) -> Writer:
    """The writer of release kind ``kind``."""
    return _WRITERS.get(kind)
