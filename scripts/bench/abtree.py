"""A/B benches: a baseline tree from ``git archive`` and one child process per measurement.

The A/B benchmarks (``dense_rows.py``, ``compact_speed.py``, ``spark_groups.py``) time this tree against a
baseline ref in alternating child processes, each importing dpspark from its own tree; this module is the
part they share. Timing code only: nothing here is used by dpspark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parents[2]


def extract(ref: str, dest: Path, paths: Sequence[str] = ("dpspark",)) -> None:
    """``git archive`` ``paths`` of ``ref`` into ``dest`` (a baseline tree to put first on PYTHONPATH)."""
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", ref, *paths], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)


def run_child(script: str, tree: Path, args: Sequence[str], *, env_extra: dict[str, str] | None = None,
              env_drop: Sequence[str] = (), timeout: float | None = None) -> dict[str, Any]:
    """Run ``script --child ARGS`` with dpspark imported from ``tree``; its last stdout line, as JSON.

    A failed child stops the bench with its stderr's tail (a benchmark never reports a failed side)."""
    env = dict(os.environ, PYTHONPATH=str(tree), **(env_extra or {}))
    for name in env_drop:
        env.pop(name, None)
    proc = subprocess.run([sys.executable, str(Path(script).resolve()), "--child", *args], env=env, cwd=str(tree),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"child failed in {tree}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ab_runs(base: Path, repeats: int, run: Callable[[Path], dict[str, Any]],
            show: Callable[[str, dict[str, Any]], None], what: str) -> dict[str, list[dict[str, Any]]]:
    """``repeats`` children per side, the sides alternating ("before" = the baseline tree ``base``, "after" = this
    tree), each result shown as it arrives; every child's ``digest`` must be the same (else the bench stops)."""
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(repeats):
        for side, tree in (("before", base), ("after", ROOT)):
            result = run(tree)
            runs[side].append(result)
            show(side, result)
    if len({r["digest"] for rs in runs.values() for r in rs}) != 1:
        raise SystemExit(f"{what}: the two sides differ")
    return runs
