"""Where a :class:`dpspark.Session` release without ``output=`` is written: a scratch folder of this process.

Each such release gets its own folder under one directory per Python process (``dpspark-releases-*`` in the
system temp directory), removed when the process exits, so notebook runs do not pile up releases in the temp
directory. ``output=`` writes a release where it is asked and keeps it; ``Session(keep_releases=True)`` keeps
the scratch releases too. The opened release objects stay usable until the process exits.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_ROOT: Path | None = None


def scratch_root() -> Path:
    """This process's scratch directory, made on first use and removed at exit."""
    global _ROOT
    if _ROOT is None or not _ROOT.is_dir():
        _ROOT = Path(tempfile.mkdtemp(prefix="dpspark-releases-"))
        atexit.register(shutil.rmtree, _ROOT, True)  # ignore_errors: a user may have removed it first
    return _ROOT


def scratch_output(keep: bool = False) -> Path:
    """A fresh release path (not yet existing) for a release without ``output=``.

    ``keep``: in a folder of its own in the system temp directory that outlives the process (the old
    behaviour); otherwise under :func:`scratch_root`, removed at exit.
    """
    parent = tempfile.mkdtemp(prefix="dpspark-") if keep else tempfile.mkdtemp(prefix="release-", dir=scratch_root())
    return Path(parent) / "release"
