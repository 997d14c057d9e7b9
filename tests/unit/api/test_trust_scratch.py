"""Issue 31 section 7: session scratch releases are removed on SIGTERM, and never by a forked child.

Each test runs a real Python process (a real Session release on the Arrow engine, written without ``output=``)
and watches its scratch directory from outside. Old main: the directory survived SIGTERM, and a bare
``os.fork()`` child that exited normally removed its parent's releases while the parent still held them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

#: a real release without output= (a scratch release), its path printed; then the test's own body
PRELUDE = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from tests.support.release_fixtures import _session
    {before}
    rel = _session(4, unit=False).release(mechanism="bernoulli_sampler", epsilon="1/40",
                                          sections={{"columns": {{"names": ["b0", "b1"]}}}})
    root = Path(rel.root)
    print(root, flush=True)
""")


def _script(body: str, before: str = "") -> str:
    return PRELUDE.format(before=before) + textwrap.dedent(body)


def _start(code: str) -> tuple[subprocess.Popen[str], Path]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line, proc.stderr.read() if proc.stderr else ""
    release = Path(line)
    assert (release / "manifest.json").is_file()
    return proc, release


def _scratch_root(release: Path) -> Path:
    root = release.parent.parent
    assert root.name.startswith("dpspark-releases-"), root
    return root


def test_sigterm_removes_the_scratch_releases_and_ends_the_process_as_sigterm_does() -> None:
    proc, release = _start(_script("time.sleep(60)"))
    root = _scratch_root(release)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM  # the default action, after the cleanup
    assert not root.exists()  # old main: the scratch directory survived


def test_sigterm_chains_an_existing_handler() -> None:
    before = ("def handler(signum, frame):\n"
              "        print('handled', flush=True)\n"
              "        raise SystemExit(7)\n"
              "    signal.signal(signal.SIGTERM, handler)").replace("\n    ", "\n")
    proc, release = _start(_script("time.sleep(60)", before=before))
    root = _scratch_root(release)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 7 and "handled" in out
    assert not root.exists()


def test_a_handler_that_keeps_running_keeps_the_releases() -> None:
    before = ("def handler(signum, frame):\n"
              "        print('ignored', flush=True)\n"
              "    signal.signal(signal.SIGTERM, handler)").replace("\n    ", "\n")
    body = """
        sys.stdin.readline()
        from dpspark.lookup import open_release
        print("open" if open_release(root).manifest.kind == "sample" else "?", flush=True)
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", _script(body, before=before)], cwd=REPO, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    release = Path(proc.stdout.readline().strip())
    root = _scratch_root(release)
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "ignored"
    assert (release / "manifest.json").is_file()
    proc.stdin.write("\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out.strip() == "open", err
    assert not root.exists()  # removed at the normal exit


def test_a_forked_child_never_removes_its_parents_scratch_releases() -> None:
    body = """
        pid = os.fork()
        if pid == 0:  # the child writes a scratch release of its own, then exits normally (atexit runs)
            child = _session(5, unit=False).release(mechanism="bernoulli_sampler", epsilon="1/40",
                                                    sections={"columns": {"names": ["b0", "b1"]}})
            print("child", child.root, flush=True)
            sys.exit(0)
        os.waitpid(pid, 0)
        from dpspark.lookup import open_release
        print("parent-open", open_release(root).manifest.kind, flush=True)
        print("parent-exists", root.exists(), flush=True)
    """
    proc, release = _start(_script(body))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert lines["parent-open"] == "sample" and lines["parent-exists"] == "True"  # old main: the child removed it
    child_root = _scratch_root(Path(lines["child"]))
    assert child_root != _scratch_root(release)
    assert not child_root.exists()  # the child's own scratch went with the child
    assert not _scratch_root(release).exists()  # and the parent's with the parent


def test_sigterm_in_a_forked_child_leaves_the_parents_releases() -> None:
    body = """
        pid = os.fork()
        if pid == 0:
            os.write(1, b"child-ready\\n")  # one write each: the two processes share the pipe
            time.sleep(60)
            os._exit(0)
        os.write(1, b"%d\\n" % pid)
        os.waitpid(pid, 0)
        print("parent-exists", root.exists(), flush=True)
    """
    proc, release = _start(_script(body))
    assert proc.stdout is not None
    # the child must be running Python code before the signal: CPython clears the signals that arrive between
    # fork() and its after-fork setup in the child (a SIGTERM sent then is lost, whatever the handler)
    lines = {proc.stdout.readline().strip(), proc.stdout.readline().strip()}
    lines.discard("child-ready")
    child = int(lines.pop())
    os.kill(child, signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "parent-exists True" in out, err
