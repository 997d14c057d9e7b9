"""Ed25519 signatures of releases: who published a manifest, not only that it is intact.

The seal (``manifest_sha256``) is a plain SHA-256: it detects damage, but anyone who edits a manifest can
reseal it with ``hashlib``. A signature binds the manifest's exact bytes to a private key; the manifest in
turn lists the sha256 of every data file, so a valid signature (with ``verify``) covers the whole release.

Format. ``manifest.sig`` beside ``manifest.json`` in the release directory, a small JSON object::

    {"format": "dpspark-signature", "version": 1, "algorithm": "ed25519",
     "key_id": "<sha256 hex of the 32-byte raw public key>", "signature": "<128 hex digits>"}

The signed message is ``b"dpspark-release-manifest-v1\\0"`` followed by the manifest's bytes (the prefix
keeps a release signature from being valid for anything else signed with the same key). Keys are PEM
files: the private key unencrypted PKCS#8 (``dpspark keygen --out PREFIX`` writes ``PREFIX.key``, mode
0600, and ``PREFIX.pub``, SubjectPublicKeyInfo), made and read by the ``cryptography`` package.

Atomicity. ``dpspark release --sign KEYFILE`` loads the key before anything is spent and signs inside
the release's temporary directory (:func:`signing` around the job; :func:`write_release_dir` calls
:func:`sign_into`), so the signature appears with the release or not at all. :func:`sign_release` signs
an existing release as a second step: the signature file is written under a temporary name and renamed,
so a reader sees either no signature (an unsigned release, refused when keys are required) or a whole one.

Reading: :func:`check_signature` (``open_release(path, trusted_keys=[...])``, ``dpspark verify --key``)
refuses a release that has no signature, a malformed one, one by an untrusted key, or one that does
not match the manifest's bytes, with :class:`ReleaseSignatureError` (a :class:`ReleaseFormatError`).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from dpspark.errors import ParameterError
from dpspark.release.errors import ReleaseExistsError, ReleaseFormatError

SIGNATURE_NAME = "manifest.sig"
FORMAT = "dpspark-signature"
VERSION = 1
DOMAIN = b"dpspark-release-manifest-v1\0"
#: a key or signature file is far smaller than this
MAX_FILE_BYTES = 1 << 14

_SIGNER: contextvars.ContextVar[Any] = contextvars.ContextVar("dpspark_release_signer", default=None)


class ReleaseSignatureError(ReleaseFormatError):
    """A release's signature is missing, malformed, by an untrusted key, or does not match its manifest."""


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - a declared dependency
        raise ParameterError("signing needs the 'cryptography' package: pip install cryptography") from None
    return ed25519


def _read_small(path: Path, what: str, private: bool = False) -> bytes:
    """The bytes of a small regular file. A FIFO, a device or a directory is refused before any read (opened
    without blocking, then checked on the open descriptor: no hang, no race with a swap of the path). A
    ``private`` key readable or writable by group or others is refused, as ssh refuses one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ParameterError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ParameterError(f"{path}: the {what} is not a regular file (a FIFO, device or directory is refused)")
        if private and os.name == "posix" and st.st_mode & 0o077:
            raise ParameterError(f"{path}: the {what} is accessible by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                                 f"a private key must be readable by its owner only: chmod 600 {path}")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # the file object owns it now
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ParameterError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise ParameterError(f"{path}: not a {what} (larger than {MAX_FILE_BYTES} bytes)")
    return data


def key_id(public_key: Any) -> str:
    """The sha256 hex of a public key's 32 raw bytes: how a signature names its key."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def generate_keypair(prefix: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write a new Ed25519 key pair: ``PREFIX.key`` (PKCS#8 PEM, mode 0600) and ``PREFIX.pub``; never overwrites."""
    from cryptography.hazmat.primitives import serialization

    key = _crypto().Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    key_path, pub_path = Path(f"{os.fspath(prefix)}.key"), Path(f"{os.fspath(prefix)}.pub")
    for path in (key_path, pub_path):
        if os.path.lexists(path):
            raise ReleaseExistsError(f"{path}: already exists; refusing to overwrite a key")
    try:
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(private)
        with open(pub_path, "xb") as fh:
            fh.write(public)
    except OSError as exc:
        raise ParameterError(f"{prefix}: cannot write the key pair ({exc.strerror})") from None
    return key_path, pub_path


def load_private_key(path: str | os.PathLike[str]) -> Any:
    """An Ed25519 private key from an unencrypted PKCS#8 PEM file of mode 0600 or stricter (ParameterError naming
    the file otherwise: a FIFO, a key readable by others, anything not a PEM Ed25519 key)."""
    from cryptography.hazmat.primitives import serialization

    ed = _crypto()
    data = _read_small(Path(path), "private key file", private=True)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"{path}: not an unencrypted PEM private key ({str(exc)[:120]})") from None
    if not isinstance(key, ed.Ed25519PrivateKey):
        raise ParameterError(f"{path}: not an Ed25519 private key (dpspark keygen makes one)")
    return key


def load_public_key(key: Any) -> Any:
    """An Ed25519 public key from a PEM file path, PEM bytes, or a key object (ParameterError otherwise)."""
    from cryptography.hazmat.primitives import serialization

    ed = _crypto()
    if isinstance(key, ed.Ed25519PublicKey):
        return key
    if isinstance(key, ed.Ed25519PrivateKey):
        return key.public_key()
    where = "public key"
    if isinstance(key, (str, os.PathLike)):
        where = os.fspath(key)
        key = _read_small(Path(key), "public key file")
    if not isinstance(key, bytes):
        raise ParameterError("a trusted key is a PEM file path, PEM bytes or an Ed25519PublicKey")
    try:
        loaded = serialization.load_pem_public_key(key)
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"{where}: not a PEM public key ({str(exc)[:120]})") from None
    if not isinstance(loaded, ed.Ed25519PublicKey):
        raise ParameterError(f"{where}: not an Ed25519 public key")
    return loaded


def signature_document(manifest: bytes, private_key: Any) -> bytes:
    """The bytes of ``manifest.sig`` for these manifest bytes."""
    doc = {"format": FORMAT, "version": VERSION, "algorithm": "ed25519", "key_id": key_id(private_key.public_key()),
           "signature": private_key.sign(DOMAIN + manifest).hex()}
    return (json.dumps(doc, sort_keys=True, indent=2) + "\n").encode("ascii")


@contextmanager
def signing(private_key: Any) -> Iterator[None]:
    """Within this block, every release written (:func:`write_release_dir`) is signed with ``private_key``."""
    token = _SIGNER.set(private_key)
    try:
        yield
    finally:
        _SIGNER.reset(token)


def sign_into(tmp: Path, manifest: bytes) -> None:
    """Called by the writer inside the release's temporary directory: sign when :func:`signing` is active."""
    key = _SIGNER.get()
    if key is not None:
        (tmp / SIGNATURE_NAME).write_bytes(signature_document(manifest, key))


def sign_release(release: str | os.PathLike[str], keyfile: str | os.PathLike[str]) -> Path:
    """Sign an existing, unsigned release (a second step; the signature file appears whole or not at all)."""
    from dpspark.release.manifest import DEFAULT_LIMITS, MANIFEST_NAME, parse_manifest, read_regular_file

    root = Path(release)
    key = load_private_key(keyfile)
    data = read_regular_file(root / MANIFEST_NAME, DEFAULT_LIMITS.max_manifest_bytes, "the manifest")
    parse_manifest(data, str(root / MANIFEST_NAME))  # only a valid release is signed
    final = root / SIGNATURE_NAME
    if os.path.lexists(final):
        raise ReleaseExistsError(f"{final}: the release is already signed")
    tmp = root / f".{SIGNATURE_NAME}.tmp-{secrets.token_hex(8)}"
    try:
        with open(tmp, "xb") as fh:
            fh.write(signature_document(data, key))
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, final)  # fails if a signature appeared meanwhile: never replaces one
    except FileExistsError:
        raise ReleaseExistsError(f"{final}: the release is already signed") from None
    except OSError as exc:
        raise ParameterError(f"{final}: cannot write the signature ({exc.strerror})") from None
    finally:
        tmp.unlink(missing_ok=True)
    return final


def check_signature(release: str | os.PathLike[str], manifest: bytes, trusted_keys: Iterable[Any]) -> str:
    """Check ``manifest.sig`` against these manifest bytes and keys; returns the signing key's id.

    Raises :class:`ReleaseSignatureError` naming the file when the release is unsigned, the signature is
    malformed, no trusted key has its id, or it does not verify.
    """
    from cryptography.exceptions import InvalidSignature

    keys = {key_id(k): k for k in (load_public_key(k) for k in trusted_keys)}
    if not keys:
        raise ParameterError("trusted_keys is empty: give at least one public key")
    path = Path(release) / SIGNATURE_NAME
    if not os.path.lexists(path):
        raise ReleaseSignatureError(f"{path}: the release is not signed (a trusted signature is required)")
    try:
        data = _read_small(path, "signature")
    except ParameterError as exc:
        raise ReleaseSignatureError(str(exc)) from None
    try:
        doc = json.loads(data.decode("ascii")) if len(data) <= MAX_FILE_BYTES else None
        ok = (isinstance(doc, dict) and doc.get("format") == FORMAT and doc.get("version") == VERSION
              and doc.get("algorithm") == "ed25519" and isinstance(doc.get("key_id"), str)
              and isinstance(doc.get("signature"), str) and len(doc["signature"]) == 128)
        signature = bytes.fromhex(doc["signature"]) if ok else b""
    except (UnicodeDecodeError, ValueError, RecursionError):
        ok = False
    if not ok:
        raise ReleaseSignatureError(f"{path}: not a dpspark release signature (damaged?)")
    key = keys.get(doc["key_id"])
    if key is None:
        raise ReleaseSignatureError(f"{path}: signed by key {doc['key_id'][:16]}..., which is not a trusted key")
    try:
        key.verify(signature, DOMAIN + manifest)
    except InvalidSignature:
        raise ReleaseSignatureError(f"{path}: the signature does not match manifest.json (the manifest was "
                                    "changed after it was signed)") from None
    return doc["key_id"]
