"""Registered mechanisms: each is a class built from public parameters (see :mod:`dpspark.mechanisms.base`)."""

from dpspark.mechanisms.registry import mechanism_class, names, register, unregister

__all__ = ["mechanism_class", "names", "register", "unregister"]
