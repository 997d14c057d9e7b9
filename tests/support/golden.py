"""Seeded golden releases of every registered mechanism: bit-identity fixtures for a restructuring.

Each mechanism has one small deterministic :class:`Case`: a table built from integer arithmetic (no random
generator, so no library version can change it), written to Parquet, a config given as the TOML sections
(:meth:`dpspark.api.config.ReleaseSpec.from_dict`), and a :class:`~dpspark.rng.SeededRandom` seed. The case runs
through the public path, :func:`dpspark.engine.runner.run_release`, on the Arrow engine when the mechanism supports it
and on the shared local Spark session otherwise. :func:`fingerprint` reduces the release directory to what
does not depend on the clock or the tmp dir; ``tests/support/golden.json`` holds the committed fingerprints
and ``tests/system/e2e/test_golden_releases.py`` compares.

Regenerate (only in a commit of its own that says why outputs were allowed to change), from the repo root::

    python -m tests.support.golden --write        # rerun every case, rewrite golden.json
    python -m tests.support.golden                # rerun and print what differs from golden.json
    python -m tests.support.golden dense compact  # only these cases (with or without --write)
    python -m tests.support.golden --stable       # also run each case twice, in two tmp dirs, and compare

Spark cases need the usual environment (JAVA_HOME, SPARK_LOCAL_IP=127.0.0.1, PYSPARK_PYTHON; see README).

Fingerprint rules. Data files (every file but ``manifest.json``) are hashed as raw bytes: the Parquet and
Arrow IPC writers embed fixed metadata only (the Arrow schema and the writer's name and version: a pyarrow
upgrade changes the bytes, so regenerate after one), no time and no path; ``--stable`` checks two runs agree
byte for byte. The manifest is kept whole except ``created_utc`` (the plan time), ``manifest_sha256`` (its
seal, which covers created_utc), ``dpspark_version`` and ``input.path`` (an absolute tmp path); any other
string that holds the tmp dir has it replaced by ``<tmp>``.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import hashlib
import json
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

GOLDEN_PATH = Path(__file__).resolve().parent / "golden.json"
#: manifest fields dropped from the fingerprint: the clock, the seal that covers it, and the package version
#: (a version bump alone is not a change of behaviour; the manifest's schema_version is kept)
VOLATILE_FIELDS = ("created_utc", "manifest_sha256", "dpspark_version")
TMP_MARK = "<tmp>"

Table = Callable[[], pa.Table]


# --- inputs: integer arithmetic only, a few hundred rows -----------------------------------------------
CITIES = ["Berlin", "Lima", "Oslo", "Paris", "Quito", "Rome", "Tokyo"]


def cities_table() -> pa.Table:
    """200 users; user u has 1 + u % 3 rows over a user-dependent set of cities (the histograms' input).

    Two one-row users have a NULL city and one a city outside every universe (the null / out-of-universe paths).
    """
    users: list[int] = []
    keys: list[str | None] = []
    for u in range(200):
        for j in range(1 + u % 3):
            users.append(u)
            keys.append(CITIES[(u * 7 + j * 3 + (u // 5)) % (3 + (u % 5))])
    first = {u: users.index(u) for u in (0, 3, 6)}  # users with one row: their only key changes
    keys[first[0]] = keys[first[3]] = None
    keys[first[6]] = "Ouagadougou"  # longer than max_bytes = 6 and not a categorical value
    return pa.table({"user": pa.array(users, pa.int64()), "city": pa.array(keys)})


def answers_table() -> pa.Table:
    """300 rows, 120 units; x in [-3, 8] in halves (exact in fixed point), a group column, two NULL x, a NaN."""
    n = 300
    xs: list[float | None] = [((i * 37) % 23) / 2 - 3 for i in range(n)]
    xs[17] = xs[211] = None
    xs[64] = float("nan")
    return pa.table({"x": pa.array(xs, pa.float64()), "u": pa.array([i % 120 for i in range(n)], pa.int64()),
                     "g": pa.array(["a" if i % 3 else "b" for i in range(n)])})


def symbols_table() -> pa.Table:
    """300 units: a symbol in {a, b, c} (d is in the universe, never in the data) and two binary columns
    (int and bool) for the samplers; one NULL in each of sym, x and y."""
    n = 300
    sym: list[str | None] = [["a", "b", "c", "d"][i % 3] for i in range(n)]
    x: list[int | None] = [i % 2 for i in range(n)]
    y: list[bool | None] = [i % 3 == 0 for i in range(n)]
    sym[5], x[6], y[7] = None, None, None
    return pa.table({"u": pa.array(range(n), pa.int64()), "sym": pa.array(sym, pa.string()),
                     "x": pa.array(x, pa.int64()), "y": pa.array(y, pa.bool_())})


def product_table() -> pa.Table:
    """300 units, six binary columns with different rates (ints and bools alternate); a NULL in x0 and x1."""
    n, d = 300, 6
    rates = [(1, 2), (9, 10), (1, 5), (1, 20), (1, 100), (0, 1)]
    cols: dict[str, pa.Array] = {"id": pa.array(range(n), pa.int64())}
    for j in range(d):
        num, den = rates[j]
        bits: list[bool | None] = [((i * 7919 + j * 104729) % den) < num for i in range(n)]  # a fixed pattern
        if j < 2:
            bits[40 + j] = None
        cols[f"x{j}"] = (pa.array([None if b is None else int(b) for b in bits], pa.int64()) if j % 2
                         else pa.array(bits, pa.bool_()))
    return pa.table(cols)


def gauss_table() -> pa.Table:
    """300 units, two correlated float columns in exact binary fractions; a NULL and a NaN in a."""
    n = 300
    a: list[float | None] = [((i * 37) % 41) / 4 - 5 for i in range(n)]
    b = [a[i] / 2 + ((i * 53) % 17) / 8 - 1 for i in range(n)]  # type: ignore[operator]
    a[3], a[4] = None, float("nan")
    return pa.table({"a": pa.array(a, pa.float64()), "b": pa.array(b, pa.float64()),
                     "uid": pa.array(range(n), pa.int64())})


# --- the cases ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One mechanism's seeded release: input table, config sections (no input/output path), engine, seed.

    ``variant`` names a second case of the same mechanism (e.g. a Spark-only config); its id is
    ``mechanism+variant``.
    """

    mechanism: str
    engine: str  # "arrow" or "spark" (the mechanism has no Arrow engine, or this config needs Spark)
    table: Table
    config: dict[str, Any]
    seed: bytes = field(default=b"")
    variant: str = ""

    @property
    def id(self) -> str:
        """The case's key in golden.json: the mechanism name, or ``mechanism+variant``."""
        return f"{self.mechanism}+{self.variant}" if self.variant else self.mechanism

    def seed_bytes(self) -> bytes:
        """The SeededRandom seed: the case's own, else one derived from the case id."""
        return self.seed or b"golden:" + self.id.encode()


def _hist(mech: str, universe: dict[str, Any], **privacy: Any) -> Case:
    return Case(mech, "arrow", cities_table, {
        "keys": {"columns": ["city"]}, "universe": universe,
        "privacy": {"mechanism": mech, "epsilon": "1", "max_units": 300, "unit_column": "user", **privacy}})


STRING6 = {"kind": "string", "max_bytes": 6}
ANSWER_QUERIES = [
    {"name": "rows", "kind": "count"},
    {"name": "total", "kind": "sum", "column": "x", "lo": "-2", "hi": "5"},
    {"name": "avg", "kind": "mean", "column": "x", "lo": "0", "hi": "10", "mean": "noisy_count"},
    {"name": "avg_n", "kind": "mean", "column": "x", "lo": "-1/2", "hi": "6", "n": 400, "scale_bits": 2},
]


FILTER_QUERIES = [
    {"name": "rows_a", "kind": "count", "filter": "g = 'a'"},
    {"name": "total_b", "kind": "sum", "column": "x", "lo": "0", "hi": "3", "filter": "g = 'b' AND x > 1"},
]


def _answers(mech: str, filters: bool = False) -> Case:
    # a query with a filter (a Spark SQL predicate) makes the release Spark-only: its own variant
    queries = ANSWER_QUERIES + FILTER_QUERIES if filters else ANSWER_QUERIES
    return Case(mech, "spark" if filters else "arrow", answers_table, {
        "privacy": {"mechanism": mech, "epsilon": "1", "delta": "1e-6", "max_units": 400, "unit_column": "u"},
        "queries": copy.deepcopy(queries)}, variant="filters" if filters else "")


def _product(mech: str, max_units: int, **privacy: Any) -> Case:
    # The plan needs ~5e4 units at alpha = 1; max_units is only a public bound, so 300 rows still run every
    # round (most batches are empty), which keeps the case small.
    return Case(mech, "spark", product_table, {
        "columns": {"names": [f"x{j}" for j in range(6)]},
        "privacy": {"mechanism": mech, "epsilon": "4", "delta": "1/1000000000", "max_units": max_units,
                    "unit_column": "id", "alpha": "1", "beta": "1/10", **privacy}})


def _gauss(mech: str, **extra: Any) -> Case:
    return Case(mech, "spark", gauss_table, {
        "gaussian": {"columns": ["a", "b"], "radius": "10", "kappa": "20", **extra},
        "privacy": {"mechanism": mech, "epsilon": "4", "delta": "1/1000000000", "max_units": 300,
                    "unit_column": "uid"}})


#: every case by id; each registered mechanism has exactly one case whose id is its name
CASES: dict[str, Case] = {c.id: c for c in (
    _hist("dense", {"kind": "categorical", "values": CITIES}),
    _hist("stability", STRING6, delta="1e-6"),
    _hist("pure_sparse", STRING6),
    _hist("compact", STRING6, m=128),
    _answers("bounded_noise"),
    _answers("gaussian"),
    _answers("bounded_noise", filters=True),
    Case("kary_sampler", "arrow", symbols_table, {
        "keys": {"columns": ["sym"]}, "universe": {"kind": "categorical", "values": ["a", "b", "c", "d"]},
        "privacy": {"mechanism": "kary_sampler", "epsilon": "1/2", "max_units": 300, "unit_column": "u",
                    "samples": 2}}),
    Case("bernoulli_sampler", "arrow", symbols_table, {
        "columns": {"names": ["x", "y"]},
        "privacy": {"mechanism": "bernoulli_sampler", "epsilon": "1/10", "max_units": 300, "unit_column": "u",
                    "samples": 2}}),
    _product("product_sampler", 60000),
    _product("product_learner", 120000),
    _gauss("gaussian_covariance"),
    _gauss("gaussian_mean", covariance=[["9", "3"], ["3", "4"]]),
    _gauss("gaussian_learner"),
    Case("groups", "arrow", answers_table, {
        "groups": {"by": ["g"], "keys": ["a", "b", "c"], "max_groups_per_unit": 2, "max_rows_per_group": 2},
        "aggregates": [{"name": "rows", "kind": "count"},
                       {"name": "total", "kind": "sum", "column": "x", "lo": "-2", "hi": "5", "nulls": "0"},
                       {"name": "avg", "kind": "mean", "column": "x", "lo": "0", "hi": "10", "nulls": "0"}],
        "privacy": {"mechanism": "groups", "epsilon": "1", "max_units": 400, "unit_column": "u"}}),
    Case("pure_groups", "arrow", answers_table, {
        "groups": {"by": ["g"], "max_rows_per_group": 2},
        "aggregates": [{"name": "rows", "kind": "count"},
                       {"name": "total", "kind": "sum", "column": "x", "lo": "-2", "hi": "5", "nulls": "0"}],
        "universe": {"kind": "string", "max_bytes": 4},
        "privacy": {"mechanism": "pure_groups", "epsilon": "1", "max_units": 150, "unit_column": "u"}}),
)}


# --- running and fingerprinting ------------------------------------------------------------------------
def run_case(case: Case, workdir: Path, spark: Any = None) -> Path:
    """Write the case's input under ``workdir``, run its seeded release publicly; returns the release dir.

    ``spark``: the session for a Spark case (None: the Arrow engine, which a Spark case refuses).
    """
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.runner import run_release
    from dpspark.rng import SeededRandom

    workdir.mkdir(parents=True, exist_ok=True)
    pq.write_table(case.table(), workdir / "in.parquet")
    raw = {"input": {"path": "in.parquet"}, **copy.deepcopy(case.config), "output": {"path": "release"}}
    spec = ReleaseSpec.from_dict(raw, base_dir=workdir)
    rng = SeededRandom(case.seed_bytes())
    if case.engine == "arrow":
        return run_release(spec, rng=rng, progress=lambda _m: None, engine="arrow")
    if spark is None:
        raise ValueError(f"case {case.id!r} runs on Spark: pass a SparkSession")
    return run_release(spec, spark=spark, rng=rng, progress=lambda _m: None, engine="spark")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _scrub(value: Any, roots: tuple[str, ...]) -> Any:
    """``value`` with every occurrence of a tmp root in a string replaced by ``<tmp>``."""
    if isinstance(value, dict):
        return {k: _scrub(v, roots) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, roots) for v in value]
    if isinstance(value, str):
        for root in roots:
            value = value.replace(root, TMP_MARK)
        return value
    return value


def stable_manifest(manifest: dict[str, Any], roots: Iterable[str] = ()) -> dict[str, Any]:
    """The manifest without its clock, seal and input path; tmp roots in any other string become ``<tmp>``."""
    out = {k: v for k, v in manifest.items() if k not in VOLATILE_FIELDS}
    if isinstance(out.get("input"), dict):
        out["input"] = {k: v for k, v in out["input"].items() if k != "path"}
    return _scrub(out, tuple(sorted({r for r in roots if r}, key=len, reverse=True)))


def fingerprint(release_dir: str | Path) -> dict[str, Any]:
    """What must stay bit-identical: sha256 of every data file, and the manifest's time- and path-free parts.

    A path under the release's parent folder (the case's tmp dir) is written relative to it, as ``<tmp>``.
    """
    root = Path(release_dir)
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel != "manifest.json":
            files[rel] = _sha256(path)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    parent = root.resolve().parent
    roots = (str(parent), str(root.parent), str(parent.resolve()))
    return {"files": files, "manifest": stable_manifest(manifest, roots)}


def fingerprint_case(case: Case, spark: Any = None, workdir: Path | None = None) -> dict[str, Any]:
    """Run ``case`` in ``workdir`` (a fresh tmp dir when None) and fingerprint its release."""
    if workdir is not None:
        return fingerprint(run_case(case, workdir, spark))
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        return fingerprint(run_case(case, Path(tmp), spark))


def load_golden(path: Path = GOLDEN_PATH) -> dict[str, Any]:
    """The committed fingerprints, by case id (mechanism name, or ``mechanism+variant``)."""
    return json.loads(path.read_text(encoding="utf-8"))["releases"]


def dump_golden(releases: dict[str, Any], path: Path = GOLDEN_PATH) -> None:
    """Write the fingerprints (sorted keys, one stable text form)."""
    body = {"about": "seeded release fingerprints of every mechanism; regenerate: python -m tests.support.golden --write",
            "releases": dict(sorted(releases.items()))}
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def diff_text(name: str, want: Any, got: Any) -> str:
    """A unified diff of two fingerprints' JSON forms ('' when equal)."""
    if want == got:
        return ""
    a = json.dumps(want, indent=1, sort_keys=True).splitlines()
    b = json.dumps(got, indent=1, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(a, b, f"golden/{name}", f"now/{name}", lineterm="", n=2))


def ordered(wanted: Iterable[str]) -> list[str]:
    """Arrow cases first (no JVM), then Spark cases; sorted within each."""
    return sorted(wanted, key=lambda n: (CASES[n].engine != "arrow", n))


def main(argv: list[str] | None = None) -> int:
    """Rerun the cases; print what differs from golden.json, or rewrite it with ``--write``."""
    import time

    from dpspark.mechanisms.registry import names

    ap = argparse.ArgumentParser(prog="python -m tests.support.golden", description=main.__doc__)
    ap.add_argument("--write", action="store_true", help="rewrite tests/support/golden.json with today's outputs")
    ap.add_argument("--stable", action="store_true",
                    help="run every case twice (two tmp dirs of different path lengths) and check both agree")
    ap.add_argument("cases", nargs="*", help="only these case ids (default: every case)")
    args = ap.parse_args(argv)
    uncovered = [m for m in names() if m not in CASES]
    unknown = [m for m in args.cases if m not in CASES]
    if uncovered or unknown:
        print(f"no golden case for: {', '.join(uncovered + unknown)} (add one to tests/support/golden.py)",
              file=sys.stderr)
        return 2
    wanted = args.cases or list(CASES)
    golden = load_golden(GOLDEN_PATH) if GOLDEN_PATH.exists() else {}
    spark = None
    got: dict[str, Any] = {}
    unstable: dict[str, Any] = {}  # name -> the second run's fingerprint, when it differs
    try:
        for name in ordered(wanted):
            case = CASES[name]
            if case.engine == "spark" and spark is None:
                from dpspark.engine.spark.local import local_session

                spark = local_session("dpspark-golden", "local[2]", shuffle_partitions=2)
            start = time.monotonic()
            got[name] = fingerprint_case(case, spark)
            took = time.monotonic() - start  # report: timing only
            status = "new" if name not in golden else "same" if golden[name] == got[name] else "DIFFERS"
            if args.stable:
                with tempfile.TemporaryDirectory(prefix="golden-second-run-") as tmp:
                    again = fingerprint_case(case, spark, Path(tmp) / "nested")
                if again != got[name]:
                    unstable[name] = again
                    status += ", UNSTABLE (two runs differ)"
            print(f"{name:22s} {case.engine:6s} {took:6.1f} s  {status}", flush=True)  # report
    finally:
        if spark is not None:
            spark.stop()
    for name, again in unstable.items():
        print(diff_text(f"{name} (run 1 vs run 2)", got[name], again))
    if unstable:
        return 3
    if args.write:
        dump_golden({**golden, **got} if args.cases else got, GOLDEN_PATH)  # a full run also drops ids no case makes
        print(f"wrote {GOLDEN_PATH}")
        return 0
    changed = [n for n in wanted if golden.get(n) != got[n]]
    for name in changed:
        print(diff_text(name, golden.get(name), got[name]) if name in golden else f"{name}: not in golden.json")
    stale = sorted(set(golden) - set(CASES))
    if stale:
        print(f"golden.json has ids no case makes (remove them by hand or rewrite the file): {', '.join(stale)}")
    return 1 if changed or stale else 0


if __name__ == "__main__":
    sys.exit(main())
