"""Known-answer vectors of compact releases, and agreement with an independent Horner evaluation in galois."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import galois
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from dpspark.mechanisms.compact.parameters import make_sampler
from dpspark.mechanisms.compact.rebuild import rebuild_mechanism
from dpspark.lookup import open_release
from dpspark.universe import IntRangeUniverse
from tests.support.compact_support import build, write

REPO = Path(__file__).resolve().parents[3]
KAV = REPO / "tests" / "support" / "data" / "compact_kav"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_compact_kav", REPO / "scripts" / "make_compact_kav.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((KAV / "expected.json").read_text())


def test_known_answers(expected: dict) -> None:
    rel = open_release(KAV / "release")
    assert rel.m == expected["m"] == 64 and rel.ell == expected["ell"] == 21
    assert rel.manifest.rng_test_only  # made with the seeded generator: says it is not private
    keys = [int(k) for k in expected["keys"]]
    want = [expected["keys"][str(k)]["count"] for k in keys]
    assert rel.counts(keys).tolist() == want
    assert [rel.count(k) for k in keys[:8]] == want[:8]


def test_the_script_reproduces_the_checked_in_coefficients(expected: dict) -> None:
    script = _script()
    release = script.build()
    assert np.array_equal(release.coefficients, open_release(KAV / "release").coefficients)
    keys = [int(k) for k in expected["keys"]]
    assert [hex(v) for v in release.field_values(keys)] == [expected["keys"][str(k)]["iota"] for k in keys]


def _file_coefficients(release_dir: Path) -> list[int]:
    """The coefficient file read independently of dpspark: big-endian bytes -> ints (iota(c) - 1)."""
    with pa.memory_map(str(release_dir / "coefficients.arrow")) as src:
        column = ipc.open_file(src).read_all().column("coefficient")
        return [int.from_bytes(b, "big") for b in column.to_pylist()]


def _galois_counts(release_dir: Path, keys: list[int], lo: int) -> tuple[list[int], list[int]]:
    """(iota(p(phi(x))), G of it) per key by galois Horner over the file's coefficients, G from the manifest."""
    manifest = json.loads((release_dir / "manifest.json").read_text())["compact"]
    field = galois.GF(2 ** manifest["field"]["m"], irreducible_poly=manifest["field"]["modulus_polynomial"], verify=False)
    coeffs = [field(c) for c in _file_coefficients(release_dir)]
    mech = manifest["counting_mechanism"]
    params = {
        "mechanism": mech["mechanism"], "n": int(mech["n"]), "d": mech["d"],
        "exp_eps": {k: int(v) for k, v in mech["exp_eps"].items()},
        "gamma": None if mech["gamma"] is None else {k: int(v) for k, v in mech["gamma"].items()},
        "t": None if mech["t"] is None else int(mech["t"]),
    }
    sampler = make_sampler(rebuild_mechanism(params), manifest["field"]["m"], manifest["sampler"]["kind"])
    iotas, counts = [], []
    for key in keys:
        x = field(key - lo)  # phi(index) with index - 1 = key - lo for an int_range universe
        acc = field(0)
        for c in reversed(coeffs):
            acc = acc * x + c
        iotas.append(int(acc) + 1)
        counts.append(sampler.sample(int(acc) + 1))
    return iotas, counts


def test_lookups_agree_with_galois_horner_on_the_known_answer_release(expected: dict) -> None:
    gen = np.random.default_rng(2024)  # test-input generation only
    keys = sorted({int(k) for k in gen.integers(0, 10000, 30)} | {0, 9999})
    iotas, counts = _galois_counts(KAV / "release", keys, lo=0)
    rel = open_release(KAV / "release")
    assert rel.counts(keys).tolist() == counts
    known = [k for k in keys if str(k) in expected["keys"]]
    assert all(hex(iotas[keys.index(k)]) == expected["keys"][str(k)]["iota"] for k in known)


def test_lookups_agree_with_galois_horner_at_m_128(tmp_path: Path) -> None:
    universe = IntRangeUniverse(-(2**63), 2**63 - 1, "k")
    release = build(universe, {5: 3, 2**63: 9, 2**64 - 1: 4}, 30, b"galois-128", m=128)
    assert release.m == 128
    out = write(tmp_path, universe, release, batch_rows=7)
    gen = np.random.default_rng(99)  # test-input generation only
    keys = [-(2**63), 2**63 - 1, 0, 5 - 2**63] + [int(v) for v in gen.integers(-(2**63), 2**63 - 1, 10, dtype=np.int64)]
    _, counts = _galois_counts(out, keys, lo=-(2**63))
    assert open_release(out).counts(keys).tolist() == counts
