"""Where a :class:`dpspark.Session` release without ``output=`` is written: a scratch folder of this process.

Each such release gets its own folder under one directory per Python process (``dpspark-releases-*`` in the
system temp directory), removed when the process exits, so notebook runs do not pile up releases in the temp
directory. ``output=`` writes a release where it is asked and keeps it; ``Session(keep_releases=True)`` keeps
the scratch releases too. The opened release objects stay usable until the process exits.

The cleanup is registered with the creating process's id: a child of ``os.fork()`` inherits the registration
(and the opened releases) but never removes its parent's directory; it gets a directory of its own if it
writes a release. SIGTERM (a scheduler stopping a notebook kernel or a job) removes the directory too: the
handler chains to whatever handler was installed before it, and with none it exits as SIGTERM would. A
process that ignores SIGTERM keeps ignoring it (and keeps its releases).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

#: creating process id -> its scratch directory (a forked child inherits its parent's entry and never removes it)
_ROOTS: dict[int, Path] = {}
#: the SIGTERM handler that was installed before ours (chained), and the process that installed ours
_PREVIOUS: Any = None
_HANDLER_PID: int | None = None


def scratch_root() -> Path:
    """This process's scratch directory, made on first use and removed at exit or on SIGTERM (this process only)."""
    pid = os.getpid()
    root = _ROOTS.get(pid)
    if root is None or not root.is_dir():
        root = Path(tempfile.mkdtemp(prefix="dpspark-releases-"))
        _ROOTS[pid] = root
        atexit.register(_remove, root, pid)
    _handle_sigterm()  # cheap when installed; retried here if the first use was off the main thread
    return root


def _remove(root: Path, pid: int) -> None:
    """Remove ``root`` if this is the process that made it (a forked child inherits the atexit entry)."""
    if os.getpid() == pid:
        shutil.rmtree(root, ignore_errors=True)  # ignore_errors: a user may have removed it first


def _remove_own() -> None:
    root = _ROOTS.get(os.getpid())
    if root is not None:
        _remove(root, os.getpid())


def _on_sigterm(signum: int, frame: Any) -> None:
    """Remove this process's scratch releases, then do what SIGTERM did before: the previous handler, or exit."""
    previous = _PREVIOUS
    if callable(previous):
        try:
            previous(signum, frame)
        except BaseException:  # the previous handler ends the process (SystemExit, KeyboardInterrupt, ...)
            _remove_own()
            raise
        return  # it chose to keep running: the releases stay usable
    _remove_own()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # the default action: the process ends as SIGTERM ends it


def _handle_sigterm() -> None:
    """Install :func:`_on_sigterm` once (main thread only: Python allows signal handlers nowhere else)."""
    global _PREVIOUS, _HANDLER_PID
    if _HANDLER_PID is not None or threading.current_thread() is not threading.main_thread():
        return  # installed already (a forked child inherits it, and it acts for the child's own directory)
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_IGN, None):  # ignored, or set outside Python: leave it alone
        return
    _PREVIOUS = previous
    signal.signal(signal.SIGTERM, _on_sigterm)
    _HANDLER_PID = os.getpid()


def scratch_output(keep: bool = False) -> Path:
    """A fresh release path (not yet existing) for a release without ``output=``.

    ``keep``: in a folder of its own in the system temp directory that outlives the process (the old
    behaviour); otherwise under :func:`scratch_root`, removed at exit.
    """
    parent = tempfile.mkdtemp(prefix="dpspark-") if keep else tempfile.mkdtemp(prefix="release-", dir=scratch_root())
    return Path(parent) / "release"
