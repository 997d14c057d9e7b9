"""Make the seeded release fixtures that pin the four histogram mechanisms' outputs.

Run once with the code a change must not alter (``python tests/support/data/port_fixtures/make_fixtures.py``);
tests/system/e2e/test_port_fixtures.py reruns the same configs through today's engine with the same seed and
checks that the data files and the exact mechanism parameters are identical. Regenerate only in a commit
of its own that says why the outputs were allowed to change.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
MECHANISMS = ("dense", "stability", "pure_sparse", "compact")
SEED = b"port-fixtures"

COMMON = """
[input]
path = "input.parquet"
[keys]
columns = ["city"]
[privacy]
mechanism = "{mech}"
epsilon = "1"
{extra}
max_units = {n}
unit_column = "user"
[output]
path = "out/{mech}"
"""
UNIVERSES = {
    "dense": '[universe]\nkind = "categorical"\nvalues = ["Berlin", "Lima", "Oslo", "Paris", "Quito", "Rome", "Tokyo"]',
    "stability": '[universe]\nkind = "string"\nmax_bytes = 6',
    "pure_sparse": '[universe]\nkind = "string"\nmax_bytes = 6',
    "compact": '[universe]\nkind = "string"\nmax_bytes = 6',
}
EXTRA = {"stability": 'delta = "1e-6"', "compact": "m = 128"}


def write_input(path: Path) -> None:
    """300 users; user u has 1 + u % 3 rows over a deterministic set of cities (so the keyed pick matters)."""
    cities = ["Berlin", "Lima", "Oslo", "Paris", "Quito", "Rome", "Tokyo"]
    users, keys = [], []
    for u in range(300):
        for j in range(1 + u % 3):
            users.append(u)
            keys.append(cities[(u * 7 + j * 3 + (u // 5)) % (3 + (u % 5))])
    pq.write_table(pa.table({"user": pa.array(users, pa.int64()), "city": pa.array(keys)}), path)


def config_path(mech: str) -> Path:
    """The fixture config of one mechanism."""
    return HERE / f"{mech}.toml"


def write_configs() -> None:
    for mech in MECHANISMS:
        text = UNIVERSES[mech] + COMMON.format(mech=mech, extra=EXTRA.get(mech, ""), n=400)
        config_path(mech).write_text(text, encoding="utf-8")


def data_file(release: Path) -> Path:
    """The release's data file (bins.parquet or coefficients.arrow)."""
    for name in ("bins.parquet", "coefficients.arrow"):
        if (release / name).exists():
            return release / name
    raise FileNotFoundError(f"no data file in {release}")


def main() -> int:
    from dpspark.api.config import load_config
    from dpspark.engine.runner import run_release
    from dpspark.rng import SeededRandom
    from dpspark.engine.spark.local import local_session

    write_input(HERE / "input.parquet")
    write_configs()
    spark = local_session("port-fixtures", "local[2]", shuffle_partitions=2)
    try:
        for mech in MECHANISMS:
            out_dir = HERE / "out" / mech
            if out_dir.exists():
                shutil.rmtree(out_dir)
            cfg = load_config(config_path(mech))
            release = run_release(cfg, spark=spark, rng=SeededRandom(SEED), progress=lambda m: None)
            src = data_file(release)
            shutil.copyfile(src, HERE / f"{mech}.{src.name}")
            manifest = json.loads((release / "manifest.json").read_text())
            (HERE / f"{mech}.manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            shutil.rmtree(HERE / "out")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
