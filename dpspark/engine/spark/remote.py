"""Spark Connect: a remote SparkSession for the release job, with dpspark's code shipped to the server.

The job's Spark side (:mod:`dpspark.engine.spark.counts`) uses the DataFrame API and
one ``mapInArrow`` only, so it runs unchanged on a Spark Connect server. The
``mapInArrow`` function is pickled on the client and unpickled in the server's
Python workers, which must import ``dpspark.engine.spark.counts``; a shared server
does not have dpspark installed, so :func:`remote_session` uploads a zip of
the client's own dpspark package as a session artifact (``pyfile``). The
server's Python needs the third-party dependencies (numpy, pyarrow, gmpy2).

The client needs pyspark's ``connect`` extra (grpcio, grpcio-status,
googleapis-common-protos, zstandard): ``pip install 'dpspark[connect]'``. It
needs no Java. Noise is still drawn on the client (the driver of the
release), from its CSPRNG; only counting happens on the server.
"""

from __future__ import annotations

import importlib.util
import socket
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Modules pyspark's Connect client imports (pyspark's ``connect`` extra).
CONNECT_MODULES = ("grpc", "grpc_status", "google.rpc", "zstandard")
CONNECT_INSTALL_HINT = "pip install 'dpspark[connect]'"
#: Files of the dpspark package that the zip carries (sources and package data; no caches).
_SHIPPED_SUFFIXES = (".py", ".json", ".typed")
#: Spark Connect's default port, when the URL names none.
DEFAULT_PORT = 15002
#: How long to wait for the server's TCP port before giving up (the client itself retries for minutes).
CONNECT_TIMEOUT_S = 15.0
#: Fixed timestamp for zip entries, so the same sources always give the same bytes.
_ZIP_DATE = (2020, 1, 1, 0, 0, 0)


class RemoteSessionError(DPSparkError, RuntimeError):
    """A Spark Connect session cannot be built (bad URL, missing client packages)."""


def check_remote_url(url: str) -> str:
    """Return ``url`` if it is a Spark Connect URL ``sc://host[:port][/;param=value...]``, else raise."""
    parts = urlsplit(url)
    if parts.scheme != "sc" or not parts.hostname:
        raise RemoteSessionError(f"not a Spark Connect URL: {url!r}; expected sc://host:port (default port 15002)")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise RemoteSessionError(f"Spark Connect URL {url!r} has an invalid port") from None
    return url


def check_reachable(url: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`RemoteSessionError` unless the server's TCP port accepts a connection within ``timeout`` s.

    pyspark's client retries an unreachable server with backoff for minutes;
    this fails fast and names the address instead.
    """
    parts = urlsplit(check_remote_url(url))
    host, port = parts.hostname or "", parts.port or DEFAULT_PORT
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as err:
        raise RemoteSessionError(
            f"cannot reach a Spark Connect server at {host}:{port} ({err.strerror or type(err).__name__})"
        ) from None


def missing_connect_modules() -> list[str]:
    """The Connect client modules that are not installed (empty when the client can run)."""
    missing = []
    for name in CONNECT_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # parent package absent (google)
            found = False
        if not found:
            missing.append(name)
    return missing


def package_zip(out_dir: str | Path, name: str = "dpspark.zip") -> Path:
    """Zip the importable dpspark package (sources and package data) into ``out_dir/name``; returns the path.

    The zip has ``dpspark/`` at its root, so it works as ``spark-submit
    --py-files`` or as a Connect ``pyfile`` artifact. Entries are sorted and
    time-stamped alike: the same sources always give the same bytes.
    """
    import dpspark

    package = Path(dpspark.__file__).resolve().parent
    out = Path(out_dir) / name
    files = sorted(
        p for p in package.rglob("*")
        if p.is_file() and p.suffix in _SHIPPED_SUFFIXES and "__pycache__" not in p.parts
    )
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in files:
            info = zipfile.ZipInfo(str(Path("dpspark") / path.relative_to(package)), date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
    return out


def remote_session(url: str, *, ship_code: bool = True) -> "SparkSession":
    """A Spark Connect session to ``url`` (``sc://host:port``), with dpspark uploaded for the server's Python workers.

    Raises :class:`RemoteSessionError` for a malformed URL, a missing Connect
    client or an unreachable server, without waiting through the client's
    retries. ``ship_code=False`` skips the upload, for servers whose Python
    already has this dpspark version.
    """
    check_remote_url(url)
    missing = missing_connect_modules()
    if missing:
        raise RemoteSessionError(
            f"the Spark Connect client needs {', '.join(missing)}; install it with: {CONNECT_INSTALL_HINT}"
        )
    check_reachable(url)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(url).getOrCreate()
    if ship_code:
        try:
            with tempfile.TemporaryDirectory(prefix="dpspark-ship-") as tmp:
                spark.addArtifacts(str(package_zip(tmp)), pyfile=True)
        except BaseException:
            spark.stop()
            raise
    return spark
