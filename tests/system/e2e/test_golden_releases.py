"""Every registered mechanism's seeded release is bit-identical to tests/support/golden.json.

The cases and the fingerprint live in tests/support/golden.py. A change that alters any mechanism's seeded
output, its exact parameters or its statements fails here; if that change is intended, regenerate in a commit
of its own that says why: ``python -m tests.support.golden --write`` (from the repo root).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dpspark.mechanisms.registry import names
from tests.support import golden
from tests.support.golden import CASES, fingerprint, fingerprint_case, load_golden, run_case

GOLDEN = load_golden()


def _param(case_id: str) -> object:
    case = CASES.get(case_id)
    return pytest.param(case_id, marks=[pytest.mark.spark] if case is not None and case.engine == "spark" else [])


#: every case, and every registered mechanism (one without a case fails below, by name)
IDS = sorted(set(CASES) | set(names()), key=lambda i: (i not in CASES or CASES[i].engine != "arrow", i))


def test_golden_covers_every_registered_mechanism() -> None:
    """A new mechanism must add a case (tests/support/golden.py) and its fingerprint (--write)."""
    registered = set(names())
    assert len(registered) >= 13
    assert registered - set(CASES) == set(), "mechanisms without a golden case in tests/support/golden.py"
    assert {c.mechanism for c in CASES.values()} == registered, "a case of a mechanism that is not registered"
    assert all(CASES[m].mechanism == m and not CASES[m].variant for m in registered)
    assert set(CASES) - set(GOLDEN) == set(), "cases without a fingerprint: python -m tests.support.golden --write"
    assert set(GOLDEN) - set(CASES) == set(), "golden.json has ids no case makes: python -m tests.support.golden --write"


@pytest.mark.parametrize("case_id", [_param(i) for i in IDS])
def test_seeded_release_matches_golden(request: pytest.FixtureRequest, tmp_path: Path, case_id: str) -> None:
    case = CASES.get(case_id)
    assert case is not None, f"no golden case for {case_id!r}: add one to tests/support/golden.py"
    spark = request.getfixturevalue("spark") if case.engine == "spark" else None
    got = fingerprint_case(case, spark, tmp_path)
    assert got["manifest"]["config"]["mechanism"] == case.mechanism
    name = case_id
    want = GOLDEN.get(name)
    assert got == want, (f"{name}: the seeded release differs from tests/support/golden.json:\n"
                         f"{golden.diff_text(name, want, got)}")


# --- the fingerprint itself: blind to the clock and the tmp dir, sensitive to every data byte and parameter ---
def _dense_release(where: Path) -> Path:
    return run_case(CASES["dense"], where)


def test_fingerprint_ignores_time_and_paths_only(tmp_path: Path) -> None:
    a = _dense_release(tmp_path / "a")
    b = _dense_release(tmp_path / "a-much-longer-folder" / "nested")
    fa, fb = fingerprint(a), fingerprint(b)
    assert fa == fb
    text = json.dumps(fa)
    assert str(tmp_path) not in text and "created_utc" not in text and "manifest_sha256" not in text
    assert fa["files"] and all(len(h) == 64 for h in fa["files"].values())

    # created_utc and the seal are outside the fingerprint; a parameter inside it is not
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["created_utc"] = "1999-01-01T00:00:00Z"
    manifest["manifest_sha256"] = "0" * 64
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert fingerprint(b) == fa
    manifest["config"]["epsilon"] = "2"
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert fingerprint(b) != fa


def test_fingerprint_sees_one_changed_data_byte_and_an_extra_file(tmp_path: Path) -> None:
    rel = _dense_release(tmp_path / "r")
    base = fingerprint(rel)
    copy = tmp_path / "copy"
    shutil.copytree(rel, copy)
    assert fingerprint(copy) == base
    data = copy / "bins.parquet"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 1
    data.write_bytes(bytes(raw))
    assert fingerprint(copy)["files"]["bins.parquet"] != base["files"]["bins.parquet"]
    (rel / "extra.bin").write_bytes(b"x")
    assert set(fingerprint(rel)["files"]) == {"bins.parquet", "extra.bin"}


def test_another_seed_gives_another_fingerprint(tmp_path: Path) -> None:
    """The golden comparison can fail: the noise depends on the injected generator."""
    from dataclasses import replace

    case = replace(CASES["bounded_noise"], seed=b"some other seed")
    assert fingerprint_case(case, None, tmp_path)["files"] != GOLDEN["bounded_noise"]["files"]


def test_regeneration_command_reports_and_rewrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m tests.support.golden``: exit 0 when equal, 1 with a diff when not; --write fixes the file."""
    path = tmp_path / "golden.json"
    stale = json.loads(json.dumps(GOLDEN))
    stale["dense"]["manifest"]["config"]["epsilon"] = "3"
    golden.dump_golden(stale, path)
    monkeypatch.setattr(golden, "GOLDEN_PATH", path)
    assert golden.main(["kary_sampler"]) == 0
    assert golden.main(["dense"]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS" in out and '-   "epsilon": "3"' in out and '+   "epsilon": "1"' in out
    assert golden.main(["--write", "dense"]) == 0
    assert load_golden(path) == GOLDEN  # only dense was rewritten, and now matches
    assert golden.main(["no_such_case"]) == 2
