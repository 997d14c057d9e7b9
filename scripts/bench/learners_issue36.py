#!/usr/bin/env python
"""Issue 36 §1-§2 figures: the product learner's per-feature bars and the Gaussian learner's clipped rows.

    .venv/bin/python scripts/bench/learners_issue36.py [--runs 200] [--out DIR]

* product: 8 binary features (survey-like marginals), 61,697 units, max_units = 100,000, epsilon = 1,
  delta = 1e-9, beta = 1/20, no alpha. (a) ``--runs`` learner runs on simulated counts: the ratio of the
  largest stated bar to the largest observed error |q_j - f_j|; (b) one release through ``dpspark release``
  (Arrow) on a seeded table: q, the bars, the observed errors.
* gaussian: age, income = exp(N(3.3, 0.7^2)) in $1000, education; 61,697 units, max_units = 100,000,
  epsilon = 1, R = 100, kappa = 1000 (and kappa = 4000, and log(income) at kappa = 400): the released
  covariance against the data's, each pass's noisy clipped rows, the warning.

Data are simulated with numpy (data, not noise); the releases draw their noise from the CSPRNG.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

P = [0.52, 0.31, 0.12, 0.07, 0.45, 0.83, 0.22, 0.64]
N, MAX_UNITS = 61_697, 100_000


def _release(config: Path) -> None:
    subprocess.run([sys.executable, "-m", "dpspark.cli.app", "release", "--config", str(config)], check=True,
                   capture_output=True)


def product(runs: int, out: Path) -> None:
    from dpspark.lookup import open_release
    from dpspark.mechanisms.product import learner as lr
    from dpspark.mechanisms.product.simulate import SimulatedCounts
    from dpspark.mechanisms.zcdp_budget import rho_within
    from dpspark.rng import SeededRandom

    rho = rho_within(Fraction(1), Fraction(1, 10**9), None)
    plan = lr.LearnerPlan.build(len(P), MAX_UNITS, rho, Fraction(1, 10), Fraction(1, 20), enforce=False)
    ratios, errs = [], []
    for seed in range(runs):
        sim = SimulatedCounts(P, N, np.random.default_rng(seed))
        run = lr.run_learner(plan, sim, SeededRandom(seed))
        size, counts = sim._slices[(0, plan.batches, plan.batches)]
        err = max(abs(float(q) - c / size) for q, c in zip(run.q, counts))  # report
        errs.append(err)
        ratios.append(float(max(run.bars)) / err)  # report
    r = np.array(ratios)
    print(f"product, {runs} simulated runs: largest error median {np.median(errs):.5f}; largest bar / largest error: "
          f"median {np.median(r):.2f}, 90th percentile {np.quantile(r, 0.9):.2f}, share <= 3: {np.mean(r <= 3):.2f}")
    x = np.random.default_rng(36).random((N, len(P))) < np.array(P)
    pq.write_table(pa.table({"id": pa.array(range(N), pa.int64()),
                             **{f"b{j}": pa.array(x[:, j]) for j in range(len(P))}}), out / "binary.parquet")
    names = ", ".join(f'"b{j}"' for j in range(len(P)))
    (out / "product.toml").write_text(f'[input]\npath = "binary.parquet"\n[columns]\nnames = [{names}]\n[privacy]\n'
                                      f'mechanism = "product_learner"\nepsilon = "1"\ndelta = "1/1000000000"\n'
                                      f'max_units = {MAX_UNITS}\nunit_column = "id"\n[output]\npath = "product"\n')
    _release(out / "product.toml")
    frame = open_release(out / "product").to_pandas()
    frame["observed_error"] = np.abs(frame["q"].to_numpy() - x.mean(axis=0))  # report
    print(frame[["column", "q", "error_bar", "observed_error", "flipped"]].to_string(index=False))
    print(f"release: largest bar / largest error = {frame.error_bar.max() / frame.observed_error.max():.2f}")


def gaussian(out: Path) -> None:
    from dpspark.lookup import open_release

    g = np.random.default_rng(36)
    age = np.clip(g.normal(46, 17, N), 18, 89)
    income = np.exp(g.normal(3.3, 0.7, N))  # report: $1000, log-normal
    educ = np.clip(g.normal(13, 3, N) + 0.05 * (income - 37), 0, 20)
    for name, inc, kappa in (("raw", income, 1000), ("raw_kappa4000", income, 4000), ("log", np.log(income), 400)):
        pq.write_table(pa.table({"id": pa.array(range(N), pa.int64()), "age": age, "income": inc, "educ": educ}),
                       out / f"{name}.parquet")
        (out / f"{name}.toml").write_text(
            f'[input]\npath = "{name}.parquet"\n[gaussian]\ncolumns = ["age", "income", "educ"]\nradius = "100"\n'
            f'kappa = "{kappa}"\n[privacy]\nmechanism = "gaussian_learner"\nepsilon = "1"\ndelta = "1/1000000000"\n'
            f'max_units = {MAX_UNITS}\nunit_column = "id"\n[output]\npath = "g_{name}"\n')
        _release(out / f"{name}.toml")
        rel = open_release(out / f"g_{name}")
        true = np.cov(np.c_[age, inc, educ].T)  # report
        cov = rel.covariance()
        print(f"gaussian {name}: var(income) {cov[1, 1]:.4g} (data {true[1, 1]:.4g}), cov(income, educ) "
              f"{cov[1, 2]:.4g} (data {true[1, 2]:.4g}); clipped rows {[c for _, c, _ in rel.clipped_rows()]}; "
              f"warning: {'yes' if rel.clipping_warning else 'none'}; noise claim {float(rel.accuracy.claims[0].bound):.4g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        product(args.runs, out)
        gaussian(out)


if __name__ == "__main__":
    main()
