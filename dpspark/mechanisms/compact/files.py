"""Hardened reading of a compact release: rebuild M and G from the manifest, check them, map the coefficients.

Order (every failure is a :class:`ReleaseFormatError` naming the file):
the manifest (already parsed, sizes checked against ``ReadLimits`` before any
allocation), every data file's size (and, with ``verify``, sha256; the
coefficient file is hashed on the same memory map its values are read from),
the counting mechanism and the sampler recomputed from their exact
parameters (d, t, t*, the sampler's constants and its privacy bounds must
equal the recorded ones), the universe, then the coefficients.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpspark.mechanisms.compact.parameters import make_sampler
from dpspark.mechanisms.compact.rebuild import rebuild_mechanism
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.mechanisms.compact.coefficients import read_coefficient_file
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.files import check_data_file
from dpspark.mechanisms.compact.section import CompactInfo
from dpspark.mechanisms.histogram.layout import bins_columns
from dpspark.release.counts_form import Manifest
from dpspark.release.files import load_universe
from dpspark.universe import Universe

_HASH_CHUNK = 1 << 24


@dataclass(frozen=True)
class CompactFiles:
    """Everything a compact lookup needs: the universe, G and the (l, m/64) uint64 coefficients."""

    universe: Universe
    sampler: EmptyBinSampler
    coefficients: np.ndarray


def _hex_or_none(value: int | None) -> str | None:
    return None if value is None else hex(value)


def rebuild_compact_sampler(info: CompactInfo, name: str) -> EmptyBinSampler:
    """G recomputed from the manifest; raises if any recorded constant or privacy bound differs."""
    mech = info.counting
    params = {
        "mechanism": mech["mechanism"],
        "n": int(mech["n"], 0),
        "exp_eps": {"num": int(mech["exp_eps"]["num"], 0), "den": int(mech["exp_eps"]["den"], 0)},
        "gamma": None if mech["gamma"] is None else {"num": int(mech["gamma"]["num"], 0), "den": int(mech["gamma"]["den"], 0)},
        "t": None if mech["t"] is None else int(mech["t"]),
        "d": mech["d"],
    }
    try:
        counting = rebuild_mechanism(params)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError) as exc:
        raise ReleaseFormatError(f"{name}: compact.counting_mechanism does not rebuild ({str(exc)[:200]})") from None
    if mech["mechanism"] == "FastSample":
        fallback = "GeoSample" if getattr(counting, "fallback", None) is not None else None
        if int(mech["t_star"]) != counting.t_star or mech["fallback"] != fallback:  # type: ignore[attr-defined]
            raise ReleaseFormatError(f"{name}: compact.counting_mechanism t_star or fallback differs from the recomputed one")
    try:
        sampler = make_sampler(counting, info.m, info.sampler["kind"])
        described = {k: v for k, v in sampler.describe().items() if k != "m"}
        bounds = sampler.ratio_bounds()
    except (ValueError, ZeroDivisionError) as exc:
        raise ReleaseFormatError(f"{name}: compact.sampler is invalid for this m ({str(exc)[:200]})") from None
    if described != info.sampler:
        raise ReleaseFormatError(f"{name}: compact.sampler differs from the sampler recomputed from its parameters")
    if bounds != (info.eps_a, info.eps_b):
        raise ReleaseFormatError(f"{name}: compact.privacy_pieces eps_a/eps_b differ from the sampler's exact bounds")
    if counting.exp_eps != Fraction(int(mech["exp_eps"]["num"], 0), int(mech["exp_eps"]["den"], 0)):
        raise ReleaseFormatError(f"{name}: compact.counting_mechanism.exp_eps is not in the rebuilt form")
    return sampler


def sha256_of_mapped(path: Path) -> str:
    """sha256 of a file through a read-only memory map (the bytes the coefficients are read from)."""
    import pyarrow as pa

    h = hashlib.sha256()
    with pa.memory_map(str(path), "r") as source:
        size = source.size()
        for start in range(0, size, _HASH_CHUNK):
            h.update(memoryview(source.read_at(min(_HASH_CHUNK, size - start), start)))
    return h.hexdigest()


def read_coefficients(manifest: Manifest, root: Path, verify: bool) -> np.ndarray:
    """The coefficient file's (l, m/64) uint64 array; with ``verify`` its sha256 is checked first."""
    info = manifest.compact
    assert info is not None
    entry = manifest.files[info.file]
    path = check_data_file(root, info.file, entry, verify=False)  # regular file of the declared size
    if verify:
        try:
            actual = sha256_of_mapped(path)
        except OSError as exc:
            raise ReleaseFormatError(f"{path}: cannot read the coefficient file ({exc})") from None
        if actual != entry.sha256:
            raise ReleaseFormatError(f"{path}: sha256 mismatch: the coefficient file was modified or damaged")
    return read_coefficient_file(path, info.m, info.ell, info.batch_rows)


def open_compact_files(manifest: Manifest, root: Path, verify: bool) -> CompactFiles:
    """Check and read a compact release whose manifest is already parsed."""
    info = manifest.compact
    name = str(root / "manifest.json")
    if manifest.kind != "compact" or info is None:
        raise ReleaseFormatError(f"{name}: not a compact release")
    for fname, entry in manifest.files.items():
        if fname != info.file:
            check_data_file(root, fname, entry, verify)
    sampler = rebuild_compact_sampler(info, name)
    universe = load_universe(manifest, root, bins_columns)  # key columns as the sparse layout names them
    if universe.size > 1 << info.m:
        raise ReleaseFormatError(f"{name}: the universe has more than 2^m elements")
    return CompactFiles(universe, sampler, read_coefficients(manifest, root, verify))
