"""Release directories: the format, its atomic writer and its hardened readers.

A release directory holds ``manifest.json`` (:mod:`dpspark.release.manifest`,
JSON Schema ``manifest.schema.json``) and data files listed in it with sha256
and byte size; a sparse release's bins are ``bins.parquet``
(:mod:`dpspark.release.layout`); a compact release's polynomial is
``coefficients.arrow`` (:mod:`dpspark.mechanisms.compact.coefficients`).
:func:`write_sparse_release` and :func:`write_compact_release` write them
atomically; :func:`read_manifest` and :mod:`dpspark.release.reader` read them,
rejecting damaged files with :class:`ReleaseFormatError`.
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "check_output_path": "atomic",
    "ReleaseExistsError": "errors",
    "ReleaseFormatError": "errors",
    "ReleaseWriteError": "errors",
    "DEFAULT_LIMITS": "manifest",
    "SCHEMA_VERSION": "manifest",
    "Manifest": "manifest",
    "ReadLimits": "manifest",
    "parse_manifest": "manifest",
    "read_manifest": "manifest",
    "write_compact_release": "dpspark.mechanisms.compact.writer",
    "write_sparse_release": "dpspark.mechanisms.histogram.writer",
}
__getattr__ = lazy_exports(__name__, _NAMES)
__all__ = [
    'DEFAULT_LIMITS',
    'Manifest',
    'ReadLimits',
    'ReleaseExistsError',
    'ReleaseFormatError',
    'ReleaseWriteError',
    'SCHEMA_VERSION',
    'check_output_path',
    'parse_manifest',
    'read_manifest',
    'write_compact_release',
    'write_sparse_release',
]
