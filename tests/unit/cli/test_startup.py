"""Issue 25 §4.5: ``dpspark lookup`` and ``dpspark inspect`` import only what they use.

Each check runs the real command in a fresh interpreter (a subprocess: an in-process run would find pandas,
Spark and numba loaded by other tests) and asserts which heavy modules it loaded. pandas is kept out of the
read commands by :func:`dpspark.cli.common.without_pandas`; a second run with pandas preloaded (so nothing is
refused) must print exactly the same, for every kind. Timing is measured by
``python -X importtime -m dpspark.cli.app lookup ...`` (see the report), not asserted here.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.golden import CASES, run_case

ROOT = Path(__file__).resolve().parents[3]
#: never needed to read a release: Spark, the plotting and data-frame libraries, the JIT and its SciPy
HEAVY = ("pyspark", "py4j", "pandas", "matplotlib", "numba", "scipy", "dpspark.engine", "dpspark.api",
         "dpspark.mechanisms.registry")
#: every kind (a compact lookup of a few keys evaluates its polynomial with numpy alone: dpspark.gf.numpy_eval)
KINDS = ("dense", "stability", "pure_sparse", "bounded_noise", "kary_sampler", "bernoulli_sampler",
         "product_learner", "gaussian_learner", "groups", "compact")

RUNNER = r"""
import contextlib, io, json, sys
if sys.argv[1] == "preload":
    import pandas  # noqa: F401 - then without_pandas refuses nothing: the reference output
from dpspark.cli.app import main
results = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
    results.append({"argv": argv, "rc": rc, "out": out.getvalue(), "err": err.getvalue(),
                    "loaded": sorted(m for m in json.loads(sys.argv[3]) if m in sys.modules)})
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("startup")
    return {k: run_case(dataclasses.replace(CASES[k], engine="arrow"), root / k) for k in KINDS}


def _run(mode: str, commands: list[list[str]]) -> list[dict]:
    proc = subprocess.run([sys.executable, "-c", RUNNER, mode, json.dumps(commands), json.dumps(HEAVY)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _commands(releases: dict[str, Path]) -> list[list[str]]:
    cmds = []
    for kind, path in releases.items():
        cmds.append(["inspect", str(path)])
        if kind in ("dense", "stability", "pure_sparse", "compact"):
            cmds.append(["lookup", str(path), "Lima", "no such city"])
        elif kind == "groups":
            cmds.append(["lookup", str(path), "a", "b"])
    return cmds


@pytest.mark.parametrize("argv", [("lookup", "dense", "Lima"), ("inspect", "dense"), ("inspect", "compact"),
                                  ("inspect", "bounded_noise"), ("inspect", "gaussian_learner"),
                                  ("lookup", "groups", "a"), ("lookup", "compact", "Lima", "Oslo"),
                                  ("verify", "compact")])
def test_a_read_command_alone_loads_no_heavy_module(releases: dict[str, Path], argv: tuple[str, ...]) -> None:
    """One fresh interpreter per command: what that command alone imports (a compact inspect, lookup or verify:
    no numba, so no compiler run and no cache load, issue 35 §1)."""
    (result,) = _run("plain", [[argv[0], str(releases[argv[1]]), *argv[2:]]])
    assert result["rc"] == 0, result
    assert result["loaded"] == [], (argv, result["loaded"])


def test_output_is_the_same_with_and_without_pandas(releases: dict[str, Path]) -> None:
    """pyarrow without pandas does the same work by its pandas-free paths: every kind prints the same."""
    commands = _commands(releases) + [["verify", str(p)] for p in releases.values()]
    plain, preload = _run("plain", commands), _run("preload", commands)
    assert "pandas" not in plain[-1]["loaded"]  # the whole sequence ran without loading pandas
    for a, b in zip(plain, preload):
        assert (a["rc"], a["out"], a["err"]) == (b["rc"], b["out"], b["err"]), a["argv"]
        assert a["out"].strip(), a["argv"]


def test_a_read_path_that_needs_pandas_can_ask_for_it() -> None:
    code = ("from dpspark.cli.common import allow_pandas, without_pandas\n"
            "with without_pandas():\n"
            "    try:\n"
            "        import pandas\n"
            "        raise SystemExit('pandas was not refused')\n"
            "    except ImportError:\n"
            "        pass\n"
            "    allow_pandas()\n"
            "    import pyarrow as pa\n"
            "    assert pa.table({'a': [1, 2]}).to_pandas()['a'].sum() == 3\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]
