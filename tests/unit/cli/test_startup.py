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


# --- issue 35 §1: what each cut keeps off a light path (one fresh interpreter per command) -----------------

#: imported by a read command's start or a release's check before issue 35's cuts; the read commands need none
#: of them (the data pass of a release imports pyarrow.compute/dataset; a cold memo computes with flint)
LIGHT = ("pyarrow.compute", "pyarrow.dataset", "gmpy2", "flint")

LOADED = ("import json, sys\nfrom dpspark.cli.app import main\nrc = main(sys.argv[2:])\n"
          "print(json.dumps([rc, sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)]), file=sys.stderr)\n")


def _loaded(argv: list[str], cache: Path, warm: bool = False) -> list[str]:
    """The LIGHT modules a fresh interpreter loaded to run ``argv`` (``warm``: after one run that fills the memo)."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPSPARK_CACHE_DIR": str(cache)}
    for _ in range(2 if warm else 1):
        proc = subprocess.run([sys.executable, "-c", LOADED, json.dumps(LIGHT), *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=300, env=env)
        rc, loaded = json.loads(proc.stderr.strip().splitlines()[-1])
        assert rc == 0, proc.stderr[-2000:]
    return loaded


@pytest.mark.parametrize(("argv", "warm", "cut"), [
    (("lookup", "stability", "Lima"), False, "histogram reader: no pc at import, no is_null() on the index words"),
    (("verify", "pure_sparse"), False, "histogram reader: no pc at import, no is_null() on the index words"),
    (("verify", "groups"), False, "one table read by ParquetFile (no pyarrow.dataset); exact ln bracket, no flint"),
    (("inspect", "dense"), False, "gmpy2 imported where the CKS grid needs it, not by privacy.conversions"),
    (("inspect", "kary_sampler"), False, "ln(13/8) + 2^-126 <= 1/2 decided by the exact ln bracket, no flint"),
    (("inspect", "bounded_noise"), True, "exp_upper of the group-privacy check read from the disk memo"),
    (("verify", "gaussian_learner"), True, "the CKS re-derivation read from the disk memo"),
])
def test_a_read_command_start_loads_none_of_the_cut_imports(releases: dict[str, Path], tmp_path: Path,
                                                            argv: tuple[str, ...], warm: bool, cut: str) -> None:
    loaded = _loaded([argv[0], str(releases[argv[1]]), *argv[2:]], tmp_path / "memo", warm)
    assert loaded == [], (argv, cut, loaded)


SUMS = """[input]
path = "{data}"
[privacy]
mechanism = "bounded_noise"
epsilon = "1"
delta = "1/1000000000"
max_units = 400
unit_column = "u"
[[queries]]
name = "s"
kind = "sum"
column = "x"
lo = "-2"
hi = "5"
filter = "g = 'a'"
[output]
path = "{out}"
"""


#: ``dpspark release`` up to its data pass: run_release (the pass, the noise, the write) replaced by a stop
UP_TO_THE_PASS = ("import json, sys\nimport dpspark.engine.runner as R\n"
                  "def stop(*a, **k):\n    raise SystemExit(0)\n"
                  "R.run_release = stop\nfrom dpspark.cli.app import main\n"
                  "try:\n    main(sys.argv[2:])\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
                  "print(json.dumps([0, sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)]), file=sys.stderr)\n")


def test_a_release_check_and_plan_loads_none_of_the_cut_imports(releases: dict[str, Path], tmp_path: Path) -> None:
    """Issue 35 §1: with a warm memo, ``dpspark release`` of a filtered bounded-noise sum on a Parquet file, up to
    its pass (config, plan, every data-free check, the charge's check), imports no pyarrow.compute/dataset or
    flint: the stage choice reads MAX_ARROW_DELTA from queries, the input's schema is its footer, the plan
    check's exp_upper is memoised. (gmpy2: dpspark.rng, which the release's noise needs, is imported first.)"""
    data = releases["bounded_noise"].parent / "in.parquet"
    config = tmp_path / "sums.toml"
    config.write_text(SUMS.format(data=data, out=tmp_path / "out"))
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPSPARK_CACHE_DIR": str(tmp_path / "memo")}
    for _ in range(2):  # the first run fills the memo (calibration, exp_upper)
        proc = subprocess.run([sys.executable, "-c", UP_TO_THE_PASS, json.dumps(LIGHT), "release", "--config",
                               str(config)], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = json.loads(proc.stderr.strip().splitlines()[-1])[1]
    assert set(loaded) <= {"gmpy2"}, loaded
    assert not (tmp_path / "out").exists()
