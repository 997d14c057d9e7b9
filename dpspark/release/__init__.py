"""Release directories: the format, its atomic writer and its hardened readers.

A release directory holds ``manifest.json`` (:mod:`dpspark.release.manifest`,
JSON Schema ``manifest.schema.json``) and data files listed in it with sha256
and byte size; a sparse release's bins are ``bins.parquet``
(:mod:`dpspark.release.layout`); a compact release's polynomial is
``coefficients.arrow`` (:mod:`dpspark.release.coefficients`).
:func:`write_sparse_release` and :func:`write_compact_release` write them
atomically; :func:`read_manifest` and :mod:`dpspark.release.reader` read them,
rejecting damaged files with :class:`ReleaseFormatError`.
"""

from dpspark.release.atomic import check_output_path
from dpspark.release.errors import ReleaseExistsError, ReleaseFormatError, ReleaseWriteError
from dpspark.release.manifest import DEFAULT_LIMITS, SCHEMA_VERSION, Manifest, ReadLimits, parse_manifest, read_manifest
from dpspark.release.compact import write_compact_release
from dpspark.release.sparse import write_sparse_release

__all__ = [
    "DEFAULT_LIMITS",
    "SCHEMA_VERSION",
    "Manifest",
    "ReadLimits",
    "ReleaseExistsError",
    "ReleaseFormatError",
    "ReleaseWriteError",
    "check_output_path",
    "parse_manifest",
    "read_manifest",
    "write_compact_release",
    "write_sparse_release",
]
