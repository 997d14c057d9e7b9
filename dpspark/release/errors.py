"""Exceptions of the release package.

Messages name the file and say what is wrong with it. They never contain a
true count or a raw input value: a release holds only public parameters and
noisy outputs, and a write error only names paths.
"""

from __future__ import annotations

from dpspark.errors import DPSparkError


class ReleaseFormatError(DPSparkError, ValueError):
    """A release directory or one of its files is missing, damaged, of another version, or invalid."""


class ReleaseExistsError(DPSparkError, FileExistsError):
    """The output path already holds something; a published release is never overwritten."""


class ReleaseWriteError(DPSparkError, OSError):
    """Writing a release failed (disk full, permissions, ...); nothing was left at the final path."""
