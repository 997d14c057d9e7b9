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
2. a data file with byte mutations, the manifest resealed to the new size and sha256 -> ``open_release``
   (so the Parquet / Arrow IPC reader and the file checks run, not only the checksum); variant ``2n``: the
   mutated file is NOT resealed and the release is opened with ``verify=False`` (no checksum saves the reader);
3. one manifest field replaced by a decoded JSON value, resealed -> ``open_release``; variant ``3s``: one
   value under section, parameters, privacy or config changed by type (a rational halved or made
   ``"ln(2)"``, an int times ten, a list shortened, a value made null ...), resealed;
4. a data file truncated (resealed or not) -> ``open_release``;
5. (a third of case 1's first bytes) one exact number of one privacy statement (an int, a rational, a
   num/den part) doubled or halved, the manifest resealed -> ``open_release``: every statement re-derives from the manifest's parameters, so an
   accepted edit is a finding (:class:`EditAccepted`, counted as ``edit-accepted``).

Every accepted release is then read through every accessor of its kind and each returned value is checked
by an oracle independent of the readers (:func:`check_values`: answers are exact rationals with
non-negative bounds, samples are keys or rows of d bits, q lies in [0, 1], a covariance is finite,
symmetric and PSD, ...). An invalid value accepted is a finding (:class:`InvalidAccepted`), as is any
exception other than ReleaseFormatError, from the open or from an accessor.

Releases of every kind work (``--all-kinds DIR`` makes one of every registered mechanism, 14, with
``tests/support/release_fixtures.py`` and ``tests/support/every_kind.py`` on Arrow, no JVM; compact: the
checked-in release; and fuzzes them in turn); a data file is chosen among those the manifest lists (none for samples and
distributions: cases 2 and 4 then mutate a value, as 3s). ``--count`` keeps going past findings and prints
their counts per kind (the issue-20 report: mutations, foreign exceptions, invalid values accepted, statement
edits accepted after a reseal, and the rejections made by a reader's last-resort net rather than by a
check, ``net``).

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
from fractions import Fraction
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


class InvalidAccepted(Exception):
    """A release was opened and one of its accessors returned a value the oracle refuses (a finding)."""


class EditAccepted(Exception):
    """A statement's exact number was doubled or halved, the manifest resealed, and the release opened (a finding)."""


def statements_of(doc: dict[str, Any]) -> dict[str, Any]:
    """Each named privacy statement's JSON object, in either form (a statement envelope or a counts manifest)."""
    privacy = doc.get("privacy")
    if not isinstance(privacy, dict):
        return {}
    if isinstance(privacy.get("statements"), dict):
        return {k: v["statement"] for k, v in privacy["statements"].items() if isinstance(v, dict) and "statement" in v}
    return {k: privacy[k] for k in ("add_remove", "replacement") if isinstance(privacy.get(k), dict)}


#: a statement's float views and its texts are not exact numbers (the texts are re-rendered, not parsed)
_NOT_EXACT = ("approx", "text", "epsilon_float", "delta_log2")


def exact_numbers(obj: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """(path, value) of every exact number under ``obj``: ints and rational strings."""
    out: list[tuple[tuple, Any]] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key not in _NOT_EXACT:
                out.extend(exact_numbers(value, path + (key,)))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            out.extend(exact_numbers(value, path + (i,)))
    elif isinstance(obj, int) and not isinstance(obj, bool):
        out.append((path, obj))
    elif isinstance(obj, str):
        try:
            Fraction(obj)
        except (ValueError, ZeroDivisionError):
            return out
        out.append((path, obj))
    return out


def scaled(value: Any, factor: Fraction) -> Any:
    """``value`` times ``factor`` in its own JSON form (an int stays an int where it can, a string a string)."""
    x = Fraction(value) * factor
    if isinstance(value, int):
        return int(x) if x.denominator == 1 else str(x)
    return str(x)


def statement_edits(doc: dict[str, Any]) -> list[tuple[str, tuple, Any]]:
    """Every (statement name, path, new value): each exact number of each statement doubled and halved."""
    out = []
    for name, statement in statements_of(doc).items():
        for path, value in exact_numbers(statement):
            for factor in (Fraction(2), Fraction(1, 2)):
                new = scaled(value, factor)
                if Fraction(new) != Fraction(value):
                    out.append((name, path, new))
    return out


def edited_manifest(doc: dict[str, Any], edit: tuple[str, tuple, Any]) -> bytes:
    """``doc`` with one statement edit applied, resealed."""
    name, path, new = edit
    doc = json.loads(json.dumps(doc))
    cur = statements_of(doc)[name]
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = new
    return seal_manifest(doc)


class Target:
    """A real release held in memory, plus a scratch directory that each directory-level input is written to."""

    def __init__(self, release: Path, scratch: Path) -> None:
        self.manifest = (release / MANIFEST).read_bytes()
        self.doc = json.loads(self.manifest)
        self.data_names = sorted(self.doc["files"])
        self.data_name = self.data_names[0] if self.data_names else None
        self.data = {name: (release / name).read_bytes() for name in self.data_names}
        self.bins = self.data.get(self.data_name, b"")
        self.others = {p.name: p.read_bytes() for p in release.iterdir()
                       if p.name != MANIFEST and p.name not in self.data}
        self.paths = _paths(self.doc)
        self.value_paths = [p for p in self.paths if p and p[0] in _VALUE_ROOTS]
        self.edits = statement_edits(self.doc)
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        for name, data in {**self.others, **self.data}.items():
            (scratch / name).write_bytes(data)
        check_values(open_release(release))  # the starting point must be a good release

    def pick(self, r: "Reader") -> str:
        """A data file (one byte of the input chooses, when the release has several)."""
        return self.data_names[r.byte() % len(self.data_names)] if len(self.data_names) > 1 else self.data_name

    def open_with(self, manifest: bytes, bins: bytes | None, name: str | None = None, verify: bool = True) -> Any:
        name = name or self.data_name
        (self.scratch / MANIFEST).write_bytes(manifest)
        for other, data in self.data.items():  # restore the files an earlier input changed
            if other != name:
                (self.scratch / other).write_bytes(data)
        if name is not None:
            if bins is None:
                (self.scratch / name).unlink(missing_ok=True)
            else:
                (self.scratch / name).write_bytes(bins)
        return open_release(self.scratch, verify=verify)

    def resealed(self, bins: bytes, name: str | None = None) -> bytes:
        name = name or self.data_name
        doc = json.loads(self.manifest)
        doc["files"][name].update(bytes=str(len(bins)), sha256=hashlib.sha256(bins).hexdigest())
        return seal_manifest(doc)


#: where case 3s changes values: the parts a reader turns into what it returns, and what re-derives them
_VALUE_ROOTS = ("section", "mechanism", "privacy", "config", "max_units", "accuracy")


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


def _semantic(value: Any, r: Reader) -> Any:
    """A typed change of one manifest value: what a hand edit, or a reader's missing check, would let through."""
    op = r.byte()
    if isinstance(value, bool):
        return [not value, None, int(value), "true"][op % 4]
    if isinstance(value, int):
        return [value * 10, -1, 0, None, value + 1, 2**70, str(value), 0.5, True][op % 9]
    if isinstance(value, float):
        return [-value, 1e308, -1.0, 0.0, None, str(value)][op % 6]
    if isinstance(value, str):
        try:
            x = Fraction(value)
        except (ValueError, ZeroDivisionError):
            x = None
        if x is not None:
            cands = [x / 2, x * 10, -x, x + 1, 0]
            if op % 9 < len(cands):
                v = cands[op % 9]
                return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
        return ["ln(2)", "", None, "1e999999", "0.5", 1, "NaN", "x" * 70000, value[::-1],
                f"{value[:40]} " + "7" * 5000][op % 10]  # a digit run beyond int()'s 4300-digit limit
    if isinstance(value, list):
        if not value:
            return [None, [None], ["ln(2)"], [[]], {}][op % 5]
        i = r.byte() % len(value)
        cands: list[Any] = [value[:-1], value + value[-1:], value[:i] + [None] + value[i + 1:],
                            value[:i] + ["ln(2)"] + value[i + 1:], value[:i] + [2] + value[i + 1:],
                            value[:i] + [0.5] + value[i + 1:], value[:i] + [[]] + value[i + 1:], None, {}]
        return cands[op % len(cands)]
    if isinstance(value, dict):
        if value and op % 3 == 0:
            drop = sorted(value)[r.byte() % len(value)]
            return {k: v for k, v in value.items() if k != drop}
        return [None, [], {**value, "extra": 1}][op % 3]
    return ["0", 0, [], {}, "ln(2)"][op % 5]


def _semantic_doc(target: Target, r: Reader) -> bytes | None:
    doc = json.loads(target.manifest)
    paths = target.value_paths or target.paths
    path = paths[r.int(2) % len(paths)]
    cur: Any = doc
    for key in path:
        cur = cur[key]
    doc = _replace(doc, path, _semantic(cur, r))
    try:
        return seal_manifest(doc)
    except (ValueError, TypeError):
        return None


def one_input(target: Target, data: bytes) -> str:
    """Run one input; returns its case name. Raises anything but ReleaseFormatError (a finding), and
    :class:`InvalidAccepted` when an opened release returns a value the oracle refuses."""
    r = Reader(data)
    first = r.byte()
    case, variant = first % 5, (first // 5) % 3
    if case == 1 and variant == 2:  # a third of case 1's bytes (which has no variants): recorded inputs replay as before
        case = 5
    name = str(case)
    opened = None
    try:
        if case == 5:
            if not target.edits:
                return "5-unchanged"  # a release with no statement (none of the built-in kinds)
            edit = target.edits[r.int(2) % len(target.edits)]
            target.open_with(edited_manifest(target.doc, edit), target.bins if target.data_name else None)
            raise EditAccepted(f"statement {edit[0]}: {'.'.join(map(str, edit[1]))} -> {str(edit[2])[:40]} accepted")
        if case in (2, 4) and target.data_name is None:  # no data file: change a value instead
            name = f"{case}s"
            sealed = _semantic_doc(target, r)
            if sealed is None:
                return f"{name}-unsealable"
            opened = target.open_with(sealed, None)
        elif case == 0:
            parse_manifest(r.rest(), MANIFEST)
        elif case == 1:
            mutated = _mutate(target.manifest, r)
            if mutated == target.manifest:  # the edits cancelled out (e.g. a delete and an insert of the same byte)
                return "1-unchanged"
            parse_manifest(mutated, MANIFEST)
        elif case == 2:
            fname = target.pick(r)
            bins = _mutate(target.data[fname], r)
            if variant == 1:  # not resealed, and no checksum: the reader alone must refuse or return valid values
                name = "2n"
                opened = target.open_with(target.manifest, bins, fname, verify=False)
            else:
                opened = target.open_with(target.resealed(bins, fname), bins, fname)
        elif case == 3 and variant != 0:
            name = "3s"
            sealed = _semantic_doc(target, r)
            if sealed is None:
                return "3s-unsealable"
            opened = target.open_with(sealed, target.data.get(target.data_name) if target.data_name else None)
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
            opened = target.open_with(sealed, target.bins if target.data_name else None)
        else:
            fname = target.pick(r)
            raw = target.data[fname]
            bins = raw[: r.int(4) % (len(raw) + 1)]
            reseal = r.byte() & 1
            opened = target.open_with(target.resealed(bins, fname) if reseal else target.manifest, bins, fname)
        if opened is not None:
            problem = check_values(opened)
            if problem is not None:
                raise InvalidAccepted(f"case {name}: {problem}")
    except ReleaseFormatError as err:
        text = str(err)
        if any(mark in text for mark in NET_MARKS):
            NET_MESSAGES[text[-160:]] += 1
            return f"{name}-net"
        if MANIFEST not in text and str(target.scratch) not in text:
            return f"{name}-unnamed"
        return f"{name}-rejected"
    return f"{name}-accepted"


#: a ReleaseFormatError with one of these was raised by a last-resort net, not by a reader's own check
NET_MARKS = ("(unchecked ", "invalid manifest (")
#: the messages of the net rejections seen (to turn each into a reader's own check)
NET_MESSAGES: Counter[str] = Counter()


def _rational(x: Any) -> bool:
    return isinstance(x, Fraction)


def check_values(rel: Any) -> str | None:
    """The oracle: every accessor of an opened release, each returned value checked by type and range.

    Returns a description of the first invalid value, or None. Independent of the readers' own checks.
    """
    import numpy as np

    from dpspark.privacy import AccuracyStatement, PrivacyStatement
    from dpspark.rng import SeededRandom

    kind = getattr(rel, "kind", None) or rel.manifest.kind
    statements = getattr(rel, "statements", None)
    if statements is not None:
        if not statements or not all(isinstance(s, PrivacyStatement) for s in statements.values()):
            return "statements"
        if not isinstance(rel.privacy, str) or not isinstance(rel.accuracy, AccuracyStatement):
            return "privacy or accuracy"
        if hasattr(rel, "describe_lines"):
            lines = rel.describe_lines()
            if not all(isinstance(a, str) and isinstance(b, str) for a, b in lines):
                return "describe_lines"
    if kind == "answers":
        for qname, value in rel.answers().items():
            if not isinstance(qname, str) or not (value is None or _rational(value)):
                return f"answer {qname!r} = {value!r}"
            for b in (rel.bound(qname), rel.bound95(qname)):
                if b is not None and (not _rational(b) or b < 0):
                    return f"bound of {qname!r} = {b!r}"
        rel.to_pandas()
    elif kind == "sample":
        d = len(rel.columns)
        bits = rel.manifest.mechanism in ("bernoulli_sampler", "product_sampler")
        for s in rel.samples():
            if bits:
                if not (isinstance(s, list) and len(s) == d and all(type(x) is int and x in (0, 1) for x in s)):
                    return f"sample {s!r} is not a row of {d} bits"
            elif d == 1:
                if not (isinstance(s, str) or type(s) is int):
                    return f"sample {s!r}"
            elif not (isinstance(s, list) and len(s) == d and all(isinstance(x, str) or type(x) is int for x in s)):
                return f"sample {s!r}"
        if len(rel.samples()) != rel.batches:
            return "samples != batches"
    elif kind == "distribution":
        q = rel.q
        if len(q) != len(rel.columns) or not all(_rational(x) and 0 <= x <= 1 for x in q):
            return f"q = {q!r}"
        rows = rel.sample(3, SeededRandom(1))
        if rows.shape != (3, len(q)) or not set(np.unique(rows)) <= {0, 1}:
            return "synthetic rows"
    elif kind == "gaussian_model":
        d = rel.dimension
        if not (isinstance(d, int) and d >= 1 and len(rel.columns) == d):
            return "dimension"
        mu, cov = rel.mean(), rel.covariance()
        if mu is not None and (mu.shape != (d,) or not np.isfinite(mu).all()):
            return "mean"
        if cov is not None:
            if cov.shape != (d, d) or not np.isfinite(cov).all() or not np.array_equal(cov, cov.T):
                return "covariance not finite and symmetric"
            if np.linalg.eigvalsh(cov).min() < -1e-9 * max(1.0, float(np.abs(np.diag(cov)).max())):  # report
                return "covariance not PSD"
        rows = rel.sample(2, SeededRandom(1))
        if rows.shape != (2, d) or not np.isfinite(rows).all():
            return "synthetic rows"
    elif kind == "compact":
        m = rel.manifest
        for index in (1, m.universe_size):
            value = rel.count_index(index)
            if not (isinstance(value, int) and 0 <= value <= m.count_range):
                return f"compact count {value!r} out of range"
    elif kind == "sparse":
        t = rel.table()
        counts = t.column("noisy_count").to_numpy()
        if len(counts) and (counts.min() < 0 or int(counts.max()) > rel.manifest.count_range):
            return "noisy count out of range"
    return None


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


def run_counted(target: Target, inputs: int, timeout: float, seed: int) -> Counter[str]:
    """Like :func:`run_random`, but a finding is counted and the run goes on: ``foreign:<type>`` (an
    exception other than ReleaseFormatError), ``invalid-accepted`` (the oracle refused a returned value),
    ``edit-accepted`` (a resealed statement edit opened), ``hang``. The reports of issues 20 and 31 read these
    counts."""
    import numpy as np

    gen = np.random.default_rng(seed)
    limit = TimeLimit(timeout)
    seen: Counter[str] = Counter()
    for _ in range(inputs):
        data = gen.integers(0, 256, int(gen.integers(1, 200)), dtype=np.uint8).tobytes()
        try:
            seen[limit.run(lambda: one_input(target, data))] += 1
        except InvalidAccepted as finding:
            seen["invalid-accepted"] += 1
            seen[f"invalid-accepted: {str(finding)[:100]}"] += 1
        except EditAccepted as finding:
            seen["edit-accepted"] += 1
            seen[f"edit-accepted: {str(finding)[:100]}"] += 1
        except Hang:
            seen["hang"] += 1
        except Exception as exc:  # the finding this fuzz exists for
            seen["foreign"] += 1
            seen[f"foreign:{type(exc).__name__}"] += 1
    return seen


#: release fixture (tests/support/release_fixtures.py) -> the mechanism it is a release of
FIXTURE_MECHANISMS = {"answers_bounded": "bounded_noise", "answers_gaussian": "gaussian", "sample_kary": "kary_sampler",
                      "sample_bernoulli": "bernoulli_sampler", "sample_product": "product_sampler",
                      "distribution": "product_learner", "gaussian_model": "gaussian_learner", "sparse": "stability"}
#: the checked-in compact release (made once on Spark; the Arrow case would compile the GF kernels for minutes)
COMPACT_RELEASE = Path(__file__).resolve().parent.parent / "tests" / "support" / "data" / "compact_kav" / "release"


def every_kind_releases(root: Path, fixtures: dict[str, Path] | None = None) -> dict[str, Path]:
    """One release of every registered mechanism (14), keyed by mechanism: the small fixtures where one exists
    (``fixtures``: already made, by fixture name), compact's checked-in release, and the golden case on Arrow
    (``tests/support/every_kind.py``) for the rest. Releases already under ``root`` are reused."""
    from tests.support.every_kind import MECHANISMS, release_of
    from tests.support.release_fixtures import make_release as make_fixture

    out: dict[str, Path] = {}
    for fixture, mechanism in FIXTURE_MECHANISMS.items():
        if fixtures and fixture in fixtures:
            out[mechanism] = fixtures[fixture]
        else:
            made = root / "fx" / fixture
            out[mechanism] = made if (made / "manifest.json").exists() else make_fixture(fixture, root / "fx")
    out["compact"] = COMPACT_RELEASE
    for mechanism in MECHANISMS:
        if mechanism not in out:
            out[mechanism] = release_of(mechanism, root / "golden")
    return dict(sorted(out.items()))


def fuzz_all_kinds(root: Path, inputs: int, timeout: float, seed: int) -> dict[str, Counter[str]]:
    """One release of every registered mechanism (:func:`every_kind_releases`) under ``root``, each fuzzed ``inputs`` times."""
    out: dict[str, Counter[str]] = {}
    releases = every_kind_releases(root / "releases")
    for i, (kind, release) in enumerate(releases.items()):
        target = Target(release, root / "scratch" / kind)
        out[kind] = run_counted(target, inputs, timeout, seed + i)
    return out


def summary_line(kind: str, seen: Counter[str]) -> str:
    """mutations, foreign exceptions, invalid values accepted, statement edits (tried, accepted), net rejections,
    accepted, rejected."""
    findings = ("foreign", "invalid-accepted", "edit-accepted", "hang")
    total = sum(n for c, n in seen.items() if ":" not in c and c not in findings) + sum(seen[f] for f in findings)
    acc = sum(n for c, n in seen.items() if c.endswith("-accepted") and ":" not in c and c not in findings)
    rej = sum(n for c, n in seen.items() if c.endswith("-rejected"))
    net = sum(n for c, n in seen.items() if c.endswith("-net"))
    unnamed = sum(n for c, n in seen.items() if c.endswith("-unnamed"))
    edits = sum(n for c, n in seen.items() if c.startswith("5-")) + seen["edit-accepted"]
    return (f"{kind:20} mutations {total:6}  foreign {seen['foreign']:3}  invalid-accepted {seen['invalid-accepted']:3}"
            f"  statement-edits {edits:5}  edit-accepted {seen['edit-accepted']:3}  hangs {seen['hang']}  net {net:3}"
            f"  unnamed {unnamed}  accepted {acc:5}  rejected {rej:6}")


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
    ap.add_argument("--all-kinds", type=Path, help="make a release of every registered mechanism here (Arrow, no "
                    "JVM) and fuzz each with --inputs inputs, counting findings (random engine)")
    ap.add_argument("--count", action="store_true", help="count findings and go on (random engine) instead of "
                    "stopping at the first one")
    args = ap.parse_args()
    import_readers(instrument=args.engine == "atheris")
    if args.all_kinds:
        start = time.perf_counter()
        results = fuzz_all_kinds(args.all_kinds, args.inputs, args.timeout, args.seed)
        print(f"{args.inputs} inputs per kind, {time.perf_counter() - start:.0f} s")  # report
        for kind, seen in results.items():
            print(summary_line(kind, seen))
            for case, n in sorted(seen.items()):
                if case.startswith(("foreign:", "invalid-accepted:", "edit-accepted:")):
                    print(f"    {case}  {n}")
        for text, n in NET_MESSAGES.most_common():  # each a case for a reader's own check
            print(f"    net: {text}  {n}")
        bad = sum(s["foreign"] + s["invalid-accepted"] + s["edit-accepted"] + s["hang"] for s in results.values())
        return 1 if bad else 0
    release = make_release(args.make_release) if args.make_release else args.release
    if release is None:
        ap.error("give --release DIR or --make-release DIR")
    run = {"hypothesis": run_hypothesis, "atheris": run_atheris, "random": run_random}[args.engine]
    if args.count:
        run = run_counted
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
