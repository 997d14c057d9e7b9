"""Shared by the peer runners of scripts/bench/groups.py: the job spec in, one JSON result line out.

Each runner runs in its peer's own venv (scripts/bench/peer_venvs.sh) and imports only this file from
the repository (stdlib only), never dpspark. The spec (JSON, argv[1]) has: workload ("public" or
"private"), data (Parquet path), rows, epsilon, delta, lo, hi, trials, keys (the public key list, or
None) and bins (median grid cells between lo and hi). The result line is ``__RESULT__ {json}``: peer,
version, trials = [{seconds, groups: {key: {aggregate: value}}}], notes.
"""

from __future__ import annotations

import json
import sys
import time
from importlib.metadata import version
from typing import Any, Callable


def load_spec() -> dict[str, Any]:
    """The job spec given on the command line (a JSON file path)."""
    with open(sys.argv[1]) as fh:
        return json.load(fh)


def run_trials(spec: dict[str, Any], one: Callable[[dict[str, Any], int], dict[str, dict[str, float]]]) -> list:
    """`spec['trials']` runs of `one(spec, trial)`; seconds = wall time of each (data read included)."""
    out = []
    for trial in range(int(spec["trials"])):
        t0 = time.perf_counter()
        groups = one(spec, trial)
        out.append({"seconds": time.perf_counter() - t0, "groups": groups})
    return out


def emit(peer: str, package: str, trials: list, notes: list[str]) -> None:
    """Print the one result line the bench parses."""
    print("__RESULT__ " + json.dumps({"peer": peer, "version": version(package), "trials": trials, "notes": notes}),
          flush=True)


def num(x: Any) -> float | None:
    """A released value as a float (None for a missing one)."""
    return None if x is None else float(x)
