"""Issue 31 §4 on Spark: what a console shows does not depend on one row of the data.

Releases run in a subprocess with a fresh JVM whose log level is WARN (a cluster's usual level, not the
embedded session's errors-only file), so everything the JVM and the Python workers print is seen. D and
its neighbours (one value past DBL_MAX / 2^b, one NULL, one unit more than max_units) must print the same
lines. On main a worker printed "RuntimeWarning: overflow encountered in multiply" for the extreme value and
Spark logged "WARN WindowExec: No Partition Defined for Window operation!" iff rows > max_units.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a fresh JVM and ten releases: about 3 minutes

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r'''
import copy, sys, time
from pathlib import Path
from dpspark.engine.spark.local import local_session
from tests.support.golden import CASES
from tests.system.arrow.test_trust_numeric_arrow import neighbours, run_table

work = Path(sys.argv[1])
spark = local_session("trust-stderr", "local[2]", shuffle_partitions=2, log_level="WARN")
for case_id in ("groups", "bounded_noise"):
    case = CASES[case_id]
    config = copy.deepcopy(case.config)
    for q in config.get("aggregates", []) + config.get("queries", []):
        if "column" in q:
            q["scale_bits"] = 16
    tables = neighbours(case)
    for name in ["warm-up"] + list(tables):
        sys.stderr.write(f"=== {case_id} {name}\n"); sys.stderr.flush()
        try:
            run_table(case, tables["D" if name == "warm-up" else name], work / case_id / name, engine="spark",
                      spark=spark, config=config)
            outcome = "ok"
        except Exception as err:
            outcome = type(err).__name__
        time.sleep(1.5)  # the JVM forwards the workers' stderr asynchronously: let it drain
        sys.stdout.write(f"{case_id} {name} {outcome}\n"); sys.stdout.flush()
sys.stderr.write("=== end\n"); sys.stderr.flush()
'''


def _sections(stderr: str) -> dict[str, list[str]]:
    """stderr lines by section, clock prefixes removed."""
    out: dict[str, list[str]] = {}
    current = "start"
    for line in stderr.splitlines():
        if line.startswith("=== "):
            current = line[4:]
            out[current] = []
            continue
        out.setdefault(current, []).append(re.sub(r"^\d\d:\d\d:\d\d ", "", line))
    return out


def test_neighbours_print_the_same_console_lines_on_spark(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcomes = proc.stdout.split()
    assert outcomes.count("ok") == 10, proc.stdout  # two cases x (warm-up, D, extreme, null, over)
    sections = _sections(proc.stderr)
    for case_id in ("groups", "bounded_noise"):
        base = sections[f"{case_id} D"]
        for name in ("extreme", "null", "over"):
            assert sections[f"{case_id} {name}"] == base, (case_id, name, sections[f"{case_id} {name}"])
    assert not any("overflow" in line or "WindowExec" in line for lines in sections.values() for line in lines)
