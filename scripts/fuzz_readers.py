#!/usr/bin/env python3
"""Long fuzz of the release readers: any input may only raise ReleaseFormatError, and none may hang.

Usage:
    python scripts/fuzz_readers.py --release DIR [--inputs 100000] [--engine hypothesis|atheris|random]
                                   [--timeout 10] [--seed 1]
    python scripts/fuzz_readers.py --make-release DIR   # a real release from the job on an embedded local Spark

Every input is one byte string, decoded by :func:`one_input` into a case on a
real release (``--release``, e.g. the output of ``dpspark release``):

0. raw manifest bytes -> ``parse_manifest``;
1. the release's manifest with byte flips/deletions/insertions -> ``parse_manifest`` (any changed byte
   must be rejected: "1-accepted" is a finding);
2. the data file with byte mutations, the manifest resealed to the new size and sha256 -> ``open_release``
   (so the Parquet / Arrow IPC reader and the file checks run, not only the checksum);
3. one manifest field replaced by a decoded JSON value, resealed -> ``open_release``;
4. the data file truncated (resealed or not) -> ``open_release``.

The data file is the one file the manifest lists: ``bins.parquet`` for a sparse release,
``coefficients.arrow`` for a compact one (e.g. ``--release tests/data/compact_kav/release``).

Engines: ``hypothesis`` (``st.binary`` with max_examples = --inputs), ``atheris``
(coverage-guided libFuzzer over the instrumented ``dpspark`` modules, ``pip install
atheris``; libFuzzer's own -timeout flags hangs, and libFuzzer exits by itself after -runs, so
its "Done N runs in S second(s)" line is the summary),
``random`` (numpy Generator bytes; fastest). The per-input time limit uses
SIGALRM (hypothesis, random). Exit status 0 means every input passed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

open_release: Callable[..., Any]
parse_manifest: Callable[..., Any]
seal_manifest: Callable[..., bytes]
ReleaseFormatError: type[Exception]

def import_readers(instrument: bool = False) -> None:
    """Import the readers under test (instrumented for coverage when fuzzing with atheris)."""
    global open_release, parse_manifest, seal_manifest, ReleaseFormatError
    if instrument:
        import atheris

        with atheris.instrument_imports(include=["dpspark"]):
            import dpspark.lookup  # noqa: F401
            import dpspark.release  # noqa: F401
    from dpspark.lookup import open_release
    from dpspark.release import ReleaseFormatError, parse_manifest
    from dpspark.release.manifest import seal_manifest


MANIFEST = "manifest.json"


class Hang(Exception):
    """An input ran longer than the per-input time limit."""


class Target:
    """A real release held in memory, plus a scratch directory that each directory-level input is written to."""

    def __init__(self, release: Path, scratch: Path) -> None:
        self.manifest = (release / MANIFEST).read_bytes()
        self.doc = json.loads(self.manifest)
        listed = sorted(self.doc["files"])
        if len(listed) != 1:
            raise SystemExit(f"expected a release with one data file, the manifest lists {listed}")
        self.data_name = listed[0]
        self.bins = (release / self.data_name).read_bytes()
        self.others = {p.name: p.read_bytes() for p in release.iterdir() if p.name not in (MANIFEST, self.data_name)}
        self.paths = _paths(self.doc)
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        for name, data in self.others.items():
            (scratch / name).write_bytes(data)
        open_release(release)  # the starting point must be a good release

    def open_with(self, manifest: bytes, bins: bytes | None) -> None:
        (self.scratch / MANIFEST).write_bytes(manifest)
        if bins is None:
            (self.scratch / self.data_name).unlink(missing_ok=True)
        else:
            (self.scratch / self.data_name).write_bytes(bins)
        open_release(self.scratch)

    def resealed(self, bins: bytes) -> bytes:
        doc = json.loads(self.manifest)
        doc["files"][self.data_name].update(bytes=str(len(bins)), sha256=hashlib.sha256(bins).hexdigest())
        return seal_manifest(doc)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, prefix + (i,)))
    return out


class Reader:
    """Consumes an input byte string from the front; past the end it yields zeros."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos] if self.pos < len(self.data) else 0
        self.pos += 1
        return b

    def int(self, nbytes: int) -> int:
        return int.from_bytes(bytes(self.byte() for _ in range(nbytes)), "big")

    def rest(self) -> bytes:
        return self.data[self.pos:]


def _mutate(raw: bytes, r: Reader) -> bytes:
    buf = bytearray(raw)
    for _ in range(1 + r.byte() % 4):
        if not buf:
            break
        pos = r.int(4) % len(buf)
        op = r.byte() % 3
        if op == 0:
            buf[pos] ^= r.byte() or 1
        elif op == 1:
            del buf[pos]
        else:
            buf.insert(pos, r.byte())
    return bytes(buf)


def _json_value(r: Reader, depth: int = 0) -> Any:
    kind = r.byte() % (9 if depth < 2 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return bool(r.byte() & 1)
    if kind == 2:
        return r.int(2) - 2**15
    if kind == 3:
        return (-1) ** r.byte() * 2 ** (r.byte() * 3) + r.int(1) - 128  # up to ~2^765: huge exact numbers
    if kind == 4:
        return r.int(4) / (r.int(2) + 1)
    if kind == 5:
        n = r.byte() % 24
        return bytes(r.byte() for _ in range(n)).decode("latin-1")
    if kind == 6:
        return str(r.int(8)) if r.byte() & 1 else hex(r.int(16))
    if kind == 7:
        return [_json_value(r, depth + 1) for _ in range(r.byte() % 4)]
    return {bytes(r.byte() for _ in range(r.byte() % 8)).decode("latin-1"): _json_value(r, depth + 1)
            for _ in range(r.byte() % 4)}


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    doc[path[0]] = _replace(doc[path[0]], path[1:], value)
    return doc


def one_input(target: Target, data: bytes) -> str:
    """Run one input; returns its case name. Raises anything but ReleaseFormatError (a finding)."""
    r = Reader(data)
    case = r.byte() % 5
    try:
        if case == 0:
            parse_manifest(r.rest(), MANIFEST)
        elif case == 1:
            mutated = _mutate(target.manifest, r)
            if mutated == target.manifest:  # the edits cancelled out (e.g. a delete and an insert of the same byte)
                return "1-unchanged"
            parse_manifest(mutated, MANIFEST)
        elif case == 2:
            bins = _mutate(target.bins, r)
            target.open_with(target.resealed(bins), bins)
        elif case == 3:
            doc = json.loads(target.manifest)
            path = target.paths[r.int(2) % len(target.paths)]
            doc = _replace(doc, path, _json_value(r))
            if not isinstance(doc, dict):
                doc = {"format": "dpspark-release", "schema_version": 1, "x": doc}
            try:
                sealed = seal_manifest(doc)
            except (ValueError, TypeError):
                return "3-unsealable"
            target.open_with(sealed, target.bins)
        else:
            bins = target.bins[: r.int(4) % (len(target.bins) + 1)]
            reseal = r.byte() & 1
            target.open_with(target.resealed(bins) if reseal else target.manifest, bins)
    except ReleaseFormatError:
        return f"{case}-rejected"
    return f"{case}-accepted"


class TimeLimit:
    """SIGALRM-based per-input time limit (main thread only)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        signal.signal(signal.SIGALRM, self._fire)

    @staticmethod
    def _fire(signum: int, frame: Any) -> None:
        raise Hang("an input ran past the per-input time limit")

    def run(self, fn: Callable[[], str]) -> str:
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


def run_random(target: Target, inputs: int, timeout: float, seed: int) -> Counter[str]:
    """``inputs`` random byte strings (numpy Generator) through :func:`one_input`."""
    import numpy as np

    gen = np.random.default_rng(seed)
    limit = TimeLimit(timeout)
    seen: Counter[str] = Counter()
    for _ in range(inputs):
        data = gen.integers(0, 256, int(gen.integers(1, 200)), dtype=np.uint8).tobytes()
        seen[limit.run(lambda: one_input(target, data))] += 1
    return seen


def run_hypothesis(target: Target, inputs: int, timeout: float, seed: int) -> Counter[str]:
    """``inputs`` hypothesis-generated byte strings through :func:`one_input`."""
    from hypothesis import HealthCheck, given, seed as hseed, settings
    from hypothesis import strategies as st

    limit = TimeLimit(timeout)
    seen: Counter[str] = Counter()

    @hseed(seed)
    @settings(max_examples=inputs, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.binary(min_size=1, max_size=200))
    def fuzz(data: bytes) -> None:
        seen[limit.run(lambda: one_input(target, data))] += 1

    fuzz()
    return seen


def run_atheris(target: Target, inputs: int, timeout: float, seed: int) -> Counter[str]:
    """Coverage-guided fuzzing with atheris (libFuzzer); its -timeout flags hangs."""
    import atheris

    seen: Counter[str] = Counter()

    def test_one(data: bytes) -> None:
        seen[one_input(target, data)] += 1

    atheris.Setup([sys.argv[0], f"-runs={inputs}", f"-timeout={max(1, int(timeout))}", f"-seed={seed}",
                   "-max_len=256"], test_one)
    try:
        atheris.Fuzz()
    except SystemExit as done:
        if done.code not in (0, None):  # libFuzzer stops at the first finding and has printed it
            raise SystemExit(f"atheris stopped on a finding after {sum(seen.values())} inputs (see above)") from None
    return seen


def make_release(out: Path) -> Path:
    """A real release of the demo query data, made by the job on an embedded local[1] Spark."""
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    out.mkdir(parents=True)
    data = out / "queries.parquet"
    subprocess.run([sys.executable, str(repo / "scripts" / "gen_queries.py"), str(data), "--rows", "5000",
                    "--users", "1000", "--vocab", "500"], check=True)
    cfg = out / "release.toml"
    cfg.write_text(f'[input]\npath = "{data}"\n[keys]\ncolumns = ["query"]\n[universe]\nkind = "string"\n'
                   'max_bytes = 15\n[privacy]\nmechanism = "stability"\nepsilon = "1"\ndelta = "1e-9"\n'
                   'max_units = 1000\nunit_column = "user_id"\n[output]\npath = "release"\n')
    subprocess.run([str(Path(sys.executable).parent / "dpspark"), "release", "--config", str(cfg),
                    "--master", "local[1]"], check=True)
    return out / "release"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", type=Path, help="a real release directory to mutate")
    ap.add_argument("--make-release", type=Path, help="make a real release here first (runs Spark), then fuzz it")
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--engine", choices=["hypothesis", "atheris", "random"], default="hypothesis")
    ap.add_argument("--timeout", type=float, default=10.0, help="per-input time limit in seconds")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    import_readers(instrument=args.engine == "atheris")
    release = make_release(args.make_release) if args.make_release else args.release
    if release is None:
        ap.error("give --release DIR or --make-release DIR")
    run = {"hypothesis": run_hypothesis, "atheris": run_atheris, "random": run_random}[args.engine]
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        target = Target(release, Path(tmp) / "release")
        start = time.perf_counter()
        seen = run(target, args.inputs, args.timeout, args.seed)
        took = time.perf_counter() - start
    total = sum(seen.values())
    print(f"engine {args.engine}: {total} inputs in {took:.1f} s ({total / max(took, 1e-9):.0f}/s); "  # report
          "only ReleaseFormatError raised, no input over the time limit")
    for case, n in sorted(seen.items()):
        print(f"  {case:14} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
