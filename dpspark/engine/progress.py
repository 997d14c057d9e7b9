"""Progress lines of a release: elapsed time, "pass i of N" with an estimate of the time left, and a heartbeat.

* :class:`StderrProgress` - the command line's printer: ``[dpspark   12.3s] message`` on stderr, and, when
  nothing was printed for ``heartbeat`` seconds (a long pass, the JVM's start, the driver's noise), a line that
  says what is still running, so a release is never silent for longer than that.
* :class:`PassCounter` - what a backend's kernels report goes through it: a kernel's ``pass K: ...`` becomes
  ``pass K of N: ...`` (N from the plan), and the end of each pass of a multi-pass release prints
  ``pass K of N done (..); about .. s of passes left``, estimated from the passes so far; the last one says what
  runs next (``; next: the noise on the driver, then the release's write``), and so does the heartbeat after it
  (it never repeats "pass N of N done" as if a pass were still running).

Progress lines name stages and times only: never a count, a number of keys, or a value. The times are the
curator's (they go to stderr, never into a release); floats here are reports only.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from typing import IO

Progress = Callable[[str], None]

#: seconds of silence after which :class:`StderrProgress` prints a heartbeat (below the promised 10 s)
HEARTBEAT_SECONDS = 8.0

_PASS_PREFIX = re.compile(r"^pass (\d+): ")
#: a line may end with what runs next (``<done>; next: <step>``): the heartbeat then names that step
NEXT = "; next: "
#: what follows the last pass of a release (the runner's own lines then say when the write starts)
AFTER_PASSES = "the noise on the driver, then the release's write"

__all__ = ["HEARTBEAT_SECONDS", "PassCounter", "Progress", "StderrProgress", "close_progress"]


class StderrProgress:
    """Progress lines with the elapsed time, to ``stream`` (stderr), and a heartbeat while nothing is printed.

    ``heartbeat``: seconds of silence before a "still running" line (None: no heartbeat). The heartbeat runs in
    a daemon thread started by the first line; :meth:`close` (or the ``with`` block's end) stops it.
    """

    def __init__(self, prefix: str = "dpspark", *, heartbeat: float | None = HEARTBEAT_SECONDS,
                 stream: IO[str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.prefix = prefix
        self.heartbeat = heartbeat
        self.stream = stream
        self.clock = clock
        self.start = clock()
        self._last_line = self.start
        self._last_msg: str | None = None
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._closed = False

    def __call__(self, msg: str) -> None:
        with self._lock:
            self._print(msg)
            self._last_msg = msg
            if self.heartbeat is not None and self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._beat, name="dpspark-progress", daemon=True)
                self._thread.start()

    def _print(self, msg: str) -> None:
        now = self.clock()
        stream = self.stream if self.stream is not None else sys.stderr
        print(f"[{self.prefix} {now - self.start:7.1f}s] {msg}", file=stream, flush=True)  # report
        self._last_line = now

    def _beat(self) -> None:
        """Print "still running: <last line>" whenever ``heartbeat`` seconds pass without a line."""
        assert self.heartbeat is not None
        with self._lock:
            while not self._closed:
                wait = self._last_line + self.heartbeat - self.clock()  # report: decides only when to print
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                quiet = self.clock() - self._last_line  # report
                self._print(f"still running ({quiet:.0f} s since the last line): {running(self._last_msg)}")

    def close(self) -> None:
        """Stop the heartbeat (idempotent); later lines still print, without a heartbeat."""
        with self._lock:
            self._closed = True
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def __enter__(self) -> "StderrProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def running(last: str | None) -> str:
    """What is running after the line ``last``: its ``next:`` step when it names one (``the noise on the driver,
    then the release's write (after: pass 7 of 7 done ...)``), else the line itself."""
    if last is None or NEXT not in last:
        return str(last)
    done, step = last.rsplit(NEXT, 1)
    return f"{step} (after: {done})"


def close_progress(progress: object) -> None:
    """Stop ``progress``'s heartbeat if it has one (any callable is accepted as a progress callback)."""
    close = getattr(progress, "close", None)
    if callable(close):
        close()


class PassCounter:
    """Numbers a backend's passes against the plan's total and estimates the time left (see the module docstring).

    ``planned``: the plan's number of passes (public; None: unknown, lines pass through unchanged). A
    mechanism may finish before pass N (the product sampler skips a round whose bucket is empty), never after.
    """

    def __init__(self, sink: Progress, planned: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.planned = planned
        self.clock = clock
        self.started = clock()
        self.done = 0

    def _known(self, k: int) -> bool:
        return self.planned is not None and 1 <= k <= self.planned

    def __call__(self, msg: str) -> None:
        """A kernel's line: ``pass K: ...`` gets the total; a bare line of a multi-pass run gets its pass number."""
        match = _PASS_PREFIX.match(msg)
        if match is not None and self._known(int(match.group(1))):
            msg = f"pass {match.group(1)} of {self.planned}: {msg[match.end():]}"
        elif match is None and self.planned is not None and self.planned > 1 and self._known(self.done + 1):
            msg = f"pass {self.done + 1} of {self.planned}: {msg}"
        self.sink(msg)

    def pass_done(self) -> None:
        """Count a finished pass; in a multi-pass run, print it with the estimated time left."""
        self.done += 1
        if self.planned is None or self.planned < 2 or not self._known(self.done):
            return
        elapsed = self.clock() - self.started  # report
        if self.done == self.planned:  # what runs now is the driver's, not a pass: say so (and the heartbeat too)
            self.sink(f"pass {self.done} of {self.planned} done (all passes took {elapsed:.1f} s){NEXT}"  # report
                      f"{AFTER_PASSES}")
            return
        left = elapsed / self.done * (self.planned - self.done)  # report: the mean pass so far times the rest
        self.sink(f"pass {self.done} of {self.planned} done ({elapsed:.1f} s so far); "
                  f"about {_seconds(left)} of passes left")


def _seconds(s: float) -> str:
    """A duration in words for an estimate ("4 s", "2 min 5 s"); report only."""
    whole = max(1, round(s))  # report
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"
