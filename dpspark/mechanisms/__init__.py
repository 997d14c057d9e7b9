"""Registered mechanisms: each is a class built from public parameters (see :mod:`dpspark.mechanisms.base`)."""

from dpspark._lazy import lazy_exports

_NAMES = {
    "mechanism_class": "registry",
    "names": "registry",
    "register": "registry",
    "unregister": "registry",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = ["mechanism_class", "names", "register", "unregister"]
