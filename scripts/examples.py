#!/usr/bin/env python3
"""Run the example configs in conf/ as they are, each to a release in a fresh timestamped directory.

Usage: scripts/examples [CONFIG ...] [--output DIR] [--master local[2]]
(default engine: Arrow for a local input file, as ``dpspark release``; --master runs them on Spark)
Only the data the named configs read is generated (at the path each config names, if missing).
One summary line per release: config, mechanism, seconds, release directory.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: input file name -> the generator command that makes it (synthetic data; arguments after the output path)
GENERATORS: dict[str, list[str]] = {
    "people.parquet": ["scripts/gen_people.py"],
    "queries.parquet": ["scripts/gen_queries.py"],
    "queries-sample.parquet": ["scripts/gen_queries.py", "--rows", "5000", "--users", "1000", "--vocab", "2000",
                               "--seed", "11"],
    "peer-workload.parquet": ["scripts/gen_peer_workload.py"],
    "peer-workload-small.parquet": ["scripts/gen_peer_workload.py", "--rows", "1000000", "--keys", "20000"],
    "measurements.parquet": ["scripts/gen_measurements.py"],
    "kary-hard.parquet": ["scripts/gen_samplers.py", "--kind", "kary", "--rows", "100000"],
    "binary-columns.parquet": ["scripts/gen_samplers.py", "--kind", "bernoulli", "--rows", "20000", "--columns", "20"],
    "product-d24.parquet": ["scripts/gen_product.py", "--rows", "500000", "--cols", "24"],
    "product-array-d8.parquet": ["scripts/gen_product.py", "--rows", "250000", "--cols", "8", "--array", "features"],
    "gaussian-5d.parquet": ["scripts/gen_gaussian.py", "--rows", "200000", "--dim", "5", "--kappa", "100", "--seed", "5"],
}


def example_configs() -> list[Path]:
    """Every example config: the TOML files directly in conf/."""
    return sorted(p for p in (ROOT / "conf").glob("*.toml"))


def input_path(config: Path) -> Path | None:
    """The file a config reads (relative to the config's folder), or None for a catalog table."""
    raw = tomllib.loads(config.read_text(encoding="utf-8"))
    path = (raw.get("input") or {}).get("path")
    if path is None and "sql" in raw:  # an [sql] config reads its one private table
        path = next((t.get("path") for t in raw.get("tables", {}).values() if not t.get("public")), None)
    if path is None:
        return None
    p = Path(path)
    return p if p.is_absolute() else (config.parent / p).resolve()


def ensure_input(path: Path) -> None:
    """Generate a missing input with its registered generator."""
    if path.exists():
        return
    gen = GENERATORS.get(path.name)
    if gen is None:
        raise SystemExit(f"examples: no generator for input {path.name}; add one to scripts/examples.py")
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"[examples] generating {path}", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, str(ROOT / gen[0]), str(path), *gen[1:]], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*", help="example configs (default: every conf/*.toml)")
    ap.add_argument("--output", default=None, help="parent folder of the releases (default: examples-output/<time>)")
    ap.add_argument("--master", default=None,
                    help="run on a local Spark master (e.g. local[2]) instead of the default engine (Arrow for local files)")
    args = ap.parse_args(argv)
    configs = [Path(c).resolve() for c in args.configs] or example_configs()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out_root = Path(args.output).resolve() if args.output else ROOT / "examples-output" / stamp
    out_root.mkdir(parents=True, exist_ok=True)
    for cfg in configs:
        inp = input_path(cfg)
        if inp is not None:
            ensure_input(inp)
    failures = 0
    for cfg in configs:
        mechanism = tomllib.loads(cfg.read_text(encoding="utf-8")).get("privacy", {}).get("mechanism", "sql")
        out = out_root / cfg.stem
        started = time.monotonic()
        where = ["--master", args.master] if args.master else []
        proc = subprocess.run([str(Path(sys.executable).parent / "dpspark"), "release", "--config", str(cfg),
                               "--output", str(out), *where], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seconds = time.monotonic() - started
        status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
        print(f"{cfg.name:32s} {mechanism:20s} {seconds:7.1f} s  {status}  {out if proc.returncode == 0 else ''}",
              flush=True)
        if proc.returncode != 0:
            failures += 1
            print(proc.stderr[-2000:], file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
