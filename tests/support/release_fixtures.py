"""Small real releases of every kind, made cheaply (no JVM): fixtures of the reader tests and the fuzz harness.

answers (bounded_noise, gaussian), sample (kary_sampler, bernoulli_sampler) and sparse run the job on the
Arrow engine over a few hundred rows. The Spark-only kinds (product_sampler's sample, product_learner's
distribution, the Gaussian learners' gaussian_model) are written by the real writer from the mechanism's
data-free plan and statements, with a hand-made DP output in place of the Spark rounds: the reader sees
exactly the manifest and tables the job would write.

:func:`make_release(kind, dir)` returns the release directory; :data:`KINDS` lists every kind made here.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpspark.rng import SeededRandom
from dpspark.mechanisms.registry import construct

N = 400
RNG_NAME = "SeededRandom (TEST ONLY, not private)"
QUERIES = [
    {"name": "rows", "kind": "count"},
    {"name": "total", "kind": "sum", "column": "x", "lo": "-2", "hi": "5"},
    {"name": "avg", "kind": "mean", "column": "x", "lo": "0", "hi": "10", "mean": "noisy_count"},
    {"name": "avg_n", "kind": "mean", "column": "x", "lo": "-1/2", "hi": "6", "n": 1000, "scale_bits": 2},
]


def _people() -> pa.Table:
    return pa.table({"u": pa.array(range(N), pa.int64()), "sym": [["a", "b", "c", "d"][i % 3] for i in range(N)],
                     "x": [((i * 37) % 23) / 2 - 3 for i in range(N)], "b0": [i % 2 for i in range(N)],
                     "b1": [i % 3 == 0 for i in range(N)], "b2": [i % 5 == 0 for i in range(N)]})


def _session(seed: int, unit: bool = True) -> Any:
    from dpspark.api.session import Session

    return Session(_people(), max_units=N, unit_column="u" if unit else None, rng=SeededRandom(seed))


def _answers(out: Path, mechanism: str) -> Path:
    s = _session(1, unit=False)
    s.release(mechanism=mechanism, epsilon="1", delta="1/1000000", output=str(out), sections={"queries": QUERIES})
    return out


def _kary(out: Path) -> Path:
    _session(3).release(mechanism="kary_sampler", epsilon="1", output=str(out), keys=["sym"],
                        universe={"kind": "categorical", "values": ["a", "b", "c", "d"]}, samples=2)
    return out


def _bernoulli(out: Path) -> Path:
    _session(4, unit=False).release(mechanism="bernoulli_sampler", epsilon="1/40", output=str(out),
                                    sections={"columns": {"names": ["b0", "b1"]}})
    return out


def _sparse(out: Path) -> Path:
    _session(5).histogram(keys=["sym"], universe={"kind": "string", "max_bytes": 4}, mechanism="stability",
                          epsilon="1", delta="1/1000000000", output=str(out))
    return out


def _spec(mechanism: str, out: Path, **extra: Any) -> Any:
    from dpspark.api.config import ReleaseSpec

    priv = {"mechanism": mechanism, "epsilon": "4", "delta": "1/1000000000", "max_units": extra.pop("n", 10**6),
            "unit_column": "u", **extra.pop("privacy", {})}
    return ReleaseSpec.from_dict({"privacy": priv, "output": {"path": str(out)}, **extra}, input_given=True)


def _write(spec: Any, release: Any) -> Path:
    from dpspark.engine.runner import write_release

    return write_release(spec, release, RNG_NAME, created_utc="2026-01-01T00:00:00Z")


def _product_sampler(out: Path) -> Path:
    from dpspark.release.statements import StatementRelease

    spec = _spec("product_sampler", out, columns={"names": ["b0", "b1", "b2"]}, privacy={"samples": 2})
    mech = construct(spec)
    return _write(spec, StatementRelease(
        algorithm="ProductSampler (RSSS Alg 4, Thm 5.1 => Thm 1.6)",
        parameters={**mech.plan(), "bucket_sizes": [[3], [3]], "rounds_run": [1, 1]},
        privacy=mech.statements(), accuracy=mech.accuracy_statement(),
        section={"samples": [[0, 1, 1], [1, 0, 0]], "columns": ["b0", "b1", "b2"], "batches": 2,
                 "independence": "independent only across batches"}))


def _product_learner(out: Path) -> Path:
    from dpspark.release.statements import StatementRelease

    spec = _spec("product_learner", out, n=2 * 10**6, columns={"names": ["b0", "b1", "b2"]})
    mech = construct(spec)
    return _write(spec, StatementRelease(
        algorithm="ProductLearner (KLSU PPDE, Alg 7, Thm 5.2)",
        parameters={**mech.plan(), "locked_in_round": 1, "rounds_run": 2},
        privacy=mech.statements(), accuracy=mech.accuracy_statement(),
        section={"q": [Fraction(1, 3), Fraction(0), Fraction(7, 8)], "columns": ["b0", "b1", "b2"],
                 "flipped": [False, True, False]}))


def _gaussian(out: Path) -> Path:
    """A gaussian_learner release: the real plan and statements, a hand-made private mean and PSD covariance."""
    from dpspark.mechanisms.gaussian_model.model_noise import plan_noise
    from dpspark.privacy import AccuracyClaim, AccuracyStatement, AddRemove, PrivacyStatement, ZCDP
    from dpspark.release.statements import StatementRelease, standard_statements

    spec = _spec("gaussian_learner", out, n=10**5, gaussian={"columns": ["g0", "g1"], "radius": "10", "kappa": "4"})
    mech = construct(spec)
    noises = [plan_noise(1, 1, mech.rho / 50, 10**5, "pair count"),
              plan_noise(3, 4, mech.rho / 2, 10**6, "PCE final"),
              plan_noise(2, 4, mech.rho / 4, 10**6, "KVMean sums")]
    rho = sum((n.rho for n in noises), Fraction(0))
    primary = PrivacyStatement(ZCDP(rho), AddRemove(spec.max_units), "KLSU 2019 with the discrete Gaussian of CKS20")
    cov = [[2.0, 0.25], [0.25, 1.5]]  # report
    tables = {"mean": pa.table({"column": ["g0", "g1"], "value": [0.125, -0.5]}),  # report
              "covariance": pa.table({"i": [0, 0, 1, 1], "j": [0, 1, 0, 1],
                                      "value": [cov[i][j] for i in range(2) for j in range(2)]})}  # report
    claim = AccuracyClaim("abs_error", 12, spec.beta, "simultaneous", condition="noise of the last pass")
    section = {"dimension": 2, "columns": ["g0", "g1"], "estimates": ["covariance", "mean"], "rho": rho,
               "rho_by_noise": [n.rho for n in noises], "passes": 5, "pass_log": [], "noise": [n.describe() for n in noises],
               "radius": mech.bounds.radius, "kappa": mech.bounds.kappa, "data_bits": mech.scales.data_bits,
               "matrix_bits": mech.scales.matrix_bits, "values": "float64 (post-processing of the exact noisy integers)",
               "units_paired": "about 1/e of the units"}
    return _write(spec, StatementRelease(
        algorithm=mech.algorithm, parameters=mech.plan(), privacy=standard_statements(primary, delta=spec.delta),
        accuracy=AccuracyStatement([claim], notes="fixture"), section=section, tables=tables))


MAKERS: dict[str, Callable[[Path], Path]] = {
    "answers_bounded": lambda p: _answers(p, "bounded_noise"),
    "answers_gaussian": lambda p: _answers(p, "gaussian"),
    "sample_kary": _kary,
    "sample_bernoulli": _bernoulli,
    "sample_product": _product_sampler,
    "distribution": _product_learner,
    "gaussian_model": _gaussian,
    "sparse": _sparse,
}
#: the statement-envelope fixtures (every kind of issue 20's fuzz: answers, sample, distribution, gaussian_model)
STATEMENT_KINDS = [k for k in MAKERS if k != "sparse"]
KINDS = list(MAKERS)


#: this process's first build of each kind (``make_release`` copies it): several test modules take every kind,
#: and each build runs a seeded release, so a copy is what a new build would write but for its creation time
_BUILT: dict[str, Path] = {}


def make_release(kind: str, root: Path) -> Path:
    """A release of fixture ``kind`` under ``root`` (``root / kind``): a copy of this process's one build of it
    (a seeded release, built once per process instead of once per test module; issue 35 §4, suite time)."""
    import atexit
    import shutil
    import tempfile

    root.mkdir(parents=True, exist_ok=True)
    if kind not in _BUILT:
        if not _BUILT:
            store = Path(tempfile.mkdtemp(prefix="dpspark-release-fixtures-"))
            atexit.register(shutil.rmtree, store, True)
        else:
            store = next(iter(_BUILT.values())).parent
        _BUILT[kind] = MAKERS[kind](store / kind)
    out = root / kind
    shutil.copytree(_BUILT[kind], out)
    return out


def copy_release(fixtures: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    """A copy of fixture release ``kind`` under ``tmp_path`` (tests damage copies, never the shared fixture)."""
    import shutil

    out = tmp_path / kind
    shutil.copytree(fixtures[kind], out)
    return out


def reseal(release: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the manifest, then reseal it with hashlib alone (what anyone can do: the seal is sha256 over the
    bytes, not a signature)."""
    import json

    from dpspark.release.manifest import seal_manifest

    doc = json.loads((release / "manifest.json").read_bytes())
    change(doc)
    (release / "manifest.json").write_bytes(seal_manifest(doc))
