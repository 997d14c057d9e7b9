"""Issue 35 §1: a cold build compiles part of its kernels in a helper process, into the same numba cache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dpspark.gf import warmup as W

ROOT = Path(__file__).resolve().parents[3]
CHECK = ("import sys; from dpspark.gf import warmup as W; "
         "print(W.cache_missing(frozenset(sys.argv[1:])))")


def _missing(cache: Path, *names: str) -> bool:
    proc = subprocess.run([sys.executable, "-c", CHECK, *names], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                            "NUMBA_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip() == "True"


def test_the_warmup_command_refuses_unknown_arguments() -> None:
    with pytest.raises(SystemExit, match="usage"):
        W.main(["--everything"])


def test_no_helper_without_an_idle_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(W.os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    assert W.start_helper(["walk_block"]) is None


def test_the_two_halves_hold_every_build_kernel_once_and_balance_the_compile() -> None:
    for names in (W.build_kernels(), W.build_kernels(100)):
        own, other = W.split_for_two(names)
        assert sorted(own + other) == sorted(names) and not set(own) & set(other)
        cpu = [sum(W.COMPILE_DECISECONDS[x] for x in part) for part in (own, other)]
        # greedy, largest first: the halves differ by at most the largest kernel's weight
        assert abs(cpu[0] - cpu[1]) <= max(W.COMPILE_DECISECONDS[x] for x in names)
    big = [sum(W.COMPILE_DECISECONDS[x] for x in part) for part in W.split_for_two(W.build_kernels())]
    assert abs(big[0] - big[1]) <= 20  # 2 CPU s of about 28


def test_every_build_kernel_has_a_signature_and_a_weight() -> None:
    names = W.BUILD_KERNELS | W.TRANSPOSED_KERNELS
    assert set(W.BUILD_SIGNATURES) == names == set(W.COMPILE_DECISECONDS)
    assert W.FFT_KERNELS < names


def test_the_helper_refuses_kernels_it_does_not_know() -> None:
    with pytest.raises(SystemExit, match="usage"):
        W.main(["--helper", "os.system"])


@pytest.mark.slow  # compiles the transposed FFT and the additive FFT's inverse from an empty cache: 20 s of CPU or more
def test_the_helper_fills_the_same_cache_with_its_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "numba"
    cache.mkdir()
    assert _missing(cache, "walk_block", "afft_inverse_block")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)  # the helper finds this dpspark through PYTHONPATH, not the working directory
    monkeypatch.setattr(W.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # as on an idle machine
    helper = W.start_helper(["walk_block", "afft_inverse_block"])
    if helper is None:
        pytest.skip("one CPU: no helper process")
    assert helper.wait(timeout=1800) == 0
    assert not _missing(cache, "walk_block", "afft_inverse_block")  # a build's process loads these
    assert _missing(cache, "afft_forward_block")  # the build's own share is left to it


def test_the_warmup_runs_the_lookup_paths_on_read_only_coefficients_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba compiles a read-only array type apart from a writable one, and the lookup library hands the
    coefficients over read-only (a memory map): the warmup must run each lookup path on both, or the first
    lookup (and the tests of those paths: 26-36 s each in CI, issue 35 §4) compiles them itself."""
    import dpspark.gf as gf

    seen: dict[str, set[bool]] = {}

    def record(name: str):  # type: ignore[no-untyped-def]
        def call(field, coeffs, *rest):  # type: ignore[no-untyped-def]
            seen.setdefault(name, set()).add(bool(coeffs.flags.writeable))
            return coeffs[0]
        return call

    for name in ("horner", "horner_many", "multipoint_eval"):
        monkeypatch.setattr(gf, name, record(name))
    W.compile_lookup()
    assert seen == {"horner": {True, False}, "horner_many": {True, False}, "multipoint_eval": {True, False}}
