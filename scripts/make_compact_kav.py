#!/usr/bin/env python3
"""Make the compact known-answer vectors in tests/support/data/compact_kav/ (deterministic; run from the repository root).

    .venv/bin/python scripts/make_compact_kav.py [--out tests/support/data/compact_kav]

A CompactHistogram over the int_range universe 0..9999 (GF(2^64), n = 20,
epsilon = 1, beta = 1/20) of fixed counts, drawn with the TEST-ONLY seeded
SHAKE-256 generator (``SeededRandom(SEED)``; the release says it is not
private), written with a pinned creation time into ``release/``, plus
``expected.json``: for chosen keys, iota(p(phi(x))) (hex) and the released
count. tests/unit/compact/test_compact_kav.py checks the files against the lookup library,
against an independent Horner evaluation in galois, and that this script's
build still reproduces the checked-in coefficients bit for bit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpspark.mechanisms.compact import CompactRelease  # noqa: E402
from dpspark.universe import IntRangeUniverse  # noqa: E402

SEED = b"dpspark compact known-answer vectors v1"
UNIVERSE = IntRangeUniverse(0, 9999, "k")
N = 20
#: 0-based indexes (= keys here, lo = 0) and true counts; total 17 <= n
COUNTS = {0: 1, 42: 6, 777: 3, 5000: 5, 9999: 2}
CREATED = "2026-01-01T00:00:00Z"
#: keys whose expected counts are recorded: the nonzero ones, the edges and a fixed spread
KEYS = sorted(set(COUNTS) | {1, 2, 41, 43, 4999, 9998} | set(range(3, 10000, 277)))


def build() -> CompactRelease:
    """The known-answer release (same code path as the job: the public plan, then compact_histogram)."""
    from fractions import Fraction

    from dpspark.mechanisms.compact import compact_histogram
    from dpspark.mechanisms.compact.plan import plan_compact
    from dpspark.rng import SeededRandom

    plan = plan_compact(N, UNIVERSE.size, Fraction(1), Fraction(1, 20), m=64)
    return compact_histogram(COUNTS, UNIVERSE.size, N, plan.mechanism, SeededRandom(SEED),
                             epsilon2=plan.epsilon2, beta="1/20", m=plan.m)


def main(argv: list[str] | None = None) -> int:
    """Write ``release/`` and ``expected.json`` under --out (replacing them)."""
    from dpspark.mechanisms.compact.writer import write_compact_release
    from dpspark.rng import SeededRandom

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="tests/support/data/compact_kav", help="output folder")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "release", ignore_errors=True)
    release = build()
    write_compact_release(
        out / "release", release=release, universe=UNIVERSE, key_columns=["k"],
        config={"epsilon": "1", "beta": "1/20", "mechanism": "compact", "max_units": N},
        input_description={"path": "known-answer vectors: fixed counts, no input file", "format": "parquet"},
        rng_name=SeededRandom.name, batch_rows=8, created_utc=CREATED,
    )
    values = release.field_values(KEYS)
    expected = {
        "seed": SEED.decode(),
        "m": release.m,
        "ell": release.ell,
        "keys": {str(k): {"iota": hex(v), "count": c} for k, v, c in zip(KEYS, values, release.lookup(KEYS))},
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out / 'release'} and {out / 'expected.json'} ({len(KEYS)} keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
