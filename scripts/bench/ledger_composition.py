"""Issue 33's benchmark: what a ledger of many releases has spent, under main's basic composition and the new one.

Usage: .venv/bin/python scripts/bench/ledger_composition.py [--out bench-results/ledger_composition.json]

Each case is a sequence of releases on one dataset, stated at delta = 1e-9 in total:

* ``zcdp-N``: N Gaussian releases of rho = 267921/2^29 (~1/2004: what a release configured (0.171, 1e-9) runs
  at, ``rho_within``), for N = 100, 1,000 and 10,000;
* ``mix-100``: 40 such zCDP releases, 30 pure releases of eps = 1/10, 30 (eps, delta) releases of (1/10, 1e-11).

Columns (each with its time): main's ledger as the releases were charged (each zCDP release at (0.171, 1e-9), so the sum's delta
is N * 1e-9, not 1e-9); main's ledger at delta = 1e-9 in total (each zCDP release configured at its share of
delta, its epsilon the certified CKS20 conversion of the same rho at that share); the new ledger at delta = 1e-9
(:func:`dpspark.privacy.mixed_composition.compose_entries`, the function the ledger runs); the ratio new /
main at 1e-9; the PLD statement (:func:`dpspark.privacy.pld.pld_epsilon`): pure releases as randomized response,
(eps, delta) releases as their worst-case pair, and the zCDP releases by the law of the *ideal* discrete Gaussian
N_Z(0, 1002) (rho = 1/2004 <= their rho) - what PLD gives when a Gaussian family records its law (no Gaussian family does:
without a law the ledger composes them by the zCDP rule). Also the time of one ``Ledger.check_spend`` on a real
SQLite ledger (zcdp filter) holding the N entries. PLD and the zCDP rule are statements for parameters fixed in
advance; admission is the filter (docs/accounting.md).
Every epsilon is exact (certified upper bounds); floats only print them.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from fractions import Fraction as F
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dpspark.ledger import Ledger  # noqa: E402
from dpspark.privacy.mixed_composition import Entry, compose_entries, converted_upper, parts  # noqa: E402
from dpspark.privacy.pld import Law, pld_epsilon  # noqa: E402

RHO = F(267921, 536870912)
EPS = F(171, 1000)
DELTA = F(1, 10**9)
DG_LAW = Law("discrete_gaussian", (F(1002), F(1)))  # 1/2004 <= RHO
PLD_BINS = 1 << 18  # fine enough for the exact grid 1/2004 at 10,000 releases


def _zcdp(n: int, delta_each: F) -> list[Entry]:
    return [Entry(EPS if delta_each == DELTA else converted_upper(RHO, delta_each), delta_each, RHO)] * n


def cases() -> dict[str, tuple[list[Entry], list[Entry]]]:
    """name -> (entries as charged, entries charged so that main's basic composition has delta 1e-9 in total)."""
    out = {f"zcdp-{n}": (_zcdp(n, DELTA), _zcdp(n, DELTA / n)) for n in (100, 1000, 10000)}
    pure = [Entry(F(1, 10), F(0))] * 30
    approx = [Entry(F(1, 10), F(1, 10**11))] * 30
    out["mix-100"] = (_zcdp(40, DELTA) + pure + approx, _zcdp(40, (DELTA - 30 * F(1, 10**11)) / 40) + pure + approx)
    return out


def check_seconds(entries: list[Entry]) -> float:
    """Wall time of one check_spend (one more zCDP release) on a real ledger holding ``entries``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "l.sqlite"
        led = Ledger(path)
        led.set_total("bench", "1000000", "1/1000000", rule="zcdp", share=("1000", "1/10000000"))
        with sqlite3.connect(path) as conn:
            conn.executemany(
                "INSERT INTO releases (dataset_id, epsilon, delta, mechanism, release_path, created_at, status, rho) "
                "VALUES ('bench', ?, ?, 'm', '/r', '2026-01-01T00:00:00.000000+00:00', 'released', ?)",
                [(str(e.epsilon), str(e.delta), None if e.rho is None else str(e.rho)) for e in entries])
        converted_upper.cache_clear()
        start = time.perf_counter()
        led.check_spend("bench", EPS, DELTA, rho=RHO)
        return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench-results/ledger_composition.json")
    args = ap.parse_args()
    rows = []
    for name, (charged, split) in cases().items():
        t0 = time.perf_counter()
        as_charged = parts(charged, "basic")
        at_target = parts(split, "basic")
        t1 = time.perf_counter()
        converted_upper.cache_clear()
        new = compose_entries(charged, DELTA)
        t2 = time.perf_counter()
        assert new is not None and at_target.delta <= DELTA
        laws = [DG_LAW if e.rho is not None else Law("pure", (e.epsilon,)) if e.delta == 0 else
                Law("approx", (e.epsilon, e.delta)) for e in charged]
        pld = pld_epsilon(laws, DELTA, new.epsilon + 1, max_bins=PLD_BINS)
        t3 = time.perf_counter()
        assert pld is not None
        rows.append({
            "case": name, "releases": len(charged),
            "main_as_charged": {"epsilon": str(as_charged.xi), "delta": str(as_charged.delta)},
            "main_at_1e-9": {"epsilon": str(at_target.xi), "delta": str(at_target.delta)},
            "new_at_1e-9": {"epsilon": str(new.epsilon), "delta": str(new.delta), "rule": new.rule,
                            "rho": str(new.parts.rho)},
            "ratio_new_over_main_at_1e-9": float(new.epsilon / at_target.xi),  # report
            "ratio_new_over_main_as_charged": float(new.epsilon / as_charged.xi),  # report
            "pld_at_1e-9": {"epsilon": str(pld.epsilon), "eta": str(pld.eta), "exact_grid": pld.exact_grid},
            "ratio_pld_over_main_at_1e-9": float(pld.epsilon / at_target.xi),  # report
            "seconds": {"main": t1 - t0, "zcdp_rule": t2 - t1, "pld": t3 - t2},
            "check_spend_seconds": check_seconds(charged),
        })
    head = (f"{'case':<11} {'main as charged (eps @ delta)':>30} {'main @ 1e-9':>12} {'zCDP rule':>10} "
            f"{'rule':>9} {'PLD':>8} {'zcdp/main':>9} {'pld/main':>9} {'t main':>8} {'t zcdp':>8} {'t pld':>8} "
            f"{'check (s)':>9}")
    print(head)
    for r in rows:  # report: floats only print the exact values
        mc, mt, nw = r["main_as_charged"], r["main_at_1e-9"], r["new_at_1e-9"]
        sec = r["seconds"]
        print(f"{r['case']:<11} {float(F(mc['epsilon'])):>14.4g} @ {float(F(mc['delta'])):<13.3g} "
              f"{float(F(mt['epsilon'])):>12.4g} {float(F(nw['epsilon'])):>10.4g} {nw['rule']:>9} "
              f"{float(F(r['pld_at_1e-9']['epsilon'])):>8.4g} {r['ratio_new_over_main_at_1e-9']:>9.3f} "
              f"{r['ratio_pld_over_main_at_1e-9']:>9.3f} {sec['main']:>8.4f} {sec['zcdp_rule']:>8.3f} "
              f"{sec['pld']:>8.2f} {r['check_spend_seconds']:>9.3f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"delta_total": str(DELTA), "rho_each": str(RHO), "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
