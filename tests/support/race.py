"""Processes racing on one ledger file: the one harness the ledger race tests share."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import Any


def run_racers(target: Callable[..., Any], path: str, n: int, timeout: float = 120) -> list[Any]:
    """Start ``n`` spawned processes ``target(path, barrier, results, i)`` that meet at one barrier (so they
    really race), wait for each to exit cleanly, and return what each put on ``results``, in arrival order.
    Spawned, not forked: the test process may host a JVM."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n)
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(path, barrier, results, i)) for i in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0
    return [results.get(timeout=10) for _ in procs]
