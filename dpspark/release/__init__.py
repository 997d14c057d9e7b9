"""Release directories: the format, its atomic writer and its hardened readers.

A release directory holds ``manifest.json`` (the one envelope, :mod:`dpspark.release.manifest`) and data
files listed in it with sha256 and byte size. Which code writes, checks and reads each release kind is
declared once per kind in the registry :mod:`dpspark.release.kinds` (each family's codec lives in its
folder, ``dpspark/mechanisms/<family>/``); nothing here knows a family. :func:`read_manifest` and
:mod:`dpspark.release.files` read a release, rejecting damaged files with :class:`ReleaseFormatError`.
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
]
