"""Exact privacy checks of the product sampler and learner rounds (dpspark.mechanisms.product).

* every round's l2 sensitivity, by enumerating all pairs of records at every ceiling (the truncation
  boundary included), equals the stated min(|S|, 2C) (Substitute) and min(|S|, C) (AddRemove);
* every round's certified rho is the sum of the per-coordinate certified rho over the worst shift vector,
  and is <= the target rho; the run's rho is their parallel composition (max), because a substituted
  record moves the sums of exactly one round - checked on every neighbour of a small dataset;
* mutant: batches chosen by hashing the record's *content* - a substituted record then lands in two
  rounds and the check above catches it.
"""

from __future__ import annotations

import hashlib
import itertools
from fractions import Fraction

import numpy as np
import pytest

from dpspark.noise.dgauss import vector_rho
from dpspark.privacy import AddRemove, PrivacyStatement, Substitute, ZCDP, parallel_statements
from dpspark.mechanisms.product import rounds as rd
from dpspark.mechanisms.product.learner import LearnerPlan, run_learner
from dpspark.mechanisms.product.sampler import SamplerPlan, run_sampler
from dpspark.rng import SeededRandom


def _records(size: int) -> list[tuple[int, ...]]:
    return list(itertools.product((0, 1), repeat=size))


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_round_sensitivity_is_exact_at_every_ceiling(size: int) -> None:
    recs = np.array(_records(size), dtype=np.int64)
    for c in range(0, size + 1):
        for flip in itertools.product((False, True), repeat=size):
            q = rd.RoundQuery(0, "t", tuple(range(size)), flip, c, 0, 1, 1)
            y = rd.truncate(recs, q)
            sub = max(int(((a - b) ** 2).sum()) for a in y for b in y)
            add = max(int((a**2).sum()) for a in y)
            assert sub == rd.sensitivity_sq(size, c, "substitute")
            assert add == rd.sensitivity_sq(size, c, "add_remove")
            assert set(np.unique(y[:, None, :] - y[None, :, :])) <= {-1, 0, 1}


@pytest.mark.parametrize("size,c", [(3, 1), (5, 2), (8, 3), (64, 64)])
def test_round_rho_is_the_sum_over_the_worst_shift_vector(size: int, c: int) -> None:
    rho = Fraction(1, 2)
    sigma = rd.noise_sigma(size, c, rho, 1000)
    mech = rd.gaussian(sigma, 1000)
    worst = [1] * rd.sensitivity_sq(size, c) + [0] * (size - rd.sensitivity_sq(size, c))
    per_coordinate = sum((mech.zcdp_rho(s) for s in worst), Fraction(0))
    assert rd.round_rho(mech, size, c) == per_coordinate == vector_rho(mech, worst)
    assert per_coordinate <= rho
    # the grid step below sigma would not certify rho (sigma is the smallest on the grid that does)
    assert rd.sensitivity_sq(size, c) / (2 * (sigma * Fraction(99, 100)) ** 2) > rho or sigma == 1


def _content_hash_oracle(rows: np.ndarray, batches: int, salt: bytes = b""):  # type: ignore[no-untyped-def]
    """MUTANT: batch = hash of the record's content (not of its unit id)."""
    def call(query: rd.RoundQuery) -> list[int]:
        b = np.array([int.from_bytes(hashlib.blake2b(salt + bytes(r.tolist())).digest()[:8], "big") % batches
                      for r in rows])
        sel = (b >= query.batch_lo) & (b < query.batch_hi)
        return [int(v) for v in rd.truncate(rows[sel], query).sum(axis=0)]
    return call


def _neighbour_violations(rows: np.ndarray, queries: list[rd.RoundQuery], make_oracle) -> list[str]:  # type: ignore[no-untyped-def]
    """Every Substitute neighbour: the number of rounds whose sums move (must be <= 1) and their Delta^2."""
    base = make_oracle(rows)
    sums = [list(base(q)) for q in queries]
    bad = []
    d = rows.shape[1]
    for i in range(rows.shape[0]):
        for new in _records(d):
            other = rows.copy()
            other[i] = new
            o = make_oracle(other)
            moved = 0
            for q, s in zip(queries, sums):
                diff = np.array(o(q)) - np.array(s)
                if diff.any():
                    moved += 1
                    if int((diff**2).sum()) > rd.sensitivity_sq(len(q.active), q.ceiling):
                        bad.append(f"record {i} -> {new}: round {q.name} moved by more than its sensitivity")
            if moved > 1:
                bad.append(f"record {i} -> {new}: {moved} rounds moved")
    return bad


def _small_run() -> tuple[np.ndarray, list[rd.RoundQuery], SamplerPlan]:
    gen = np.random.default_rng(7)
    rows = (gen.random((8, 3)) < np.array([0.6, 0.3, 0.1])).astype(np.int64)
    plan = SamplerPlan.build(3, 8, Fraction(1, 2), Fraction(1, 2), batches=64, enforce=False)
    oracle = rd.RowsOracle(rows, range(8), b"k" * 16, 64)
    run_sampler(plan, oracle, SeededRandom(1))
    return rows, oracle.queries, plan


def test_a_substituted_record_moves_one_round_only() -> None:
    rows, queries, _ = _small_run()
    assert len(queries) >= 3
    ids = list(range(rows.shape[0]))
    bad = _neighbour_violations(rows, queries, lambda r: rd.RowsOracle(r, ids, b"k" * 16, 64))
    assert bad == []


def test_mutant_content_hash_batches_is_caught() -> None:
    rows, queries, _ = _small_run()
    for salt in range(4):  # whatever the content hash, some substitution moves a record across rounds
        bad = _neighbour_violations(rows, queries, lambda r: _content_hash_oracle(r, 64, bytes([salt])))
        assert any("rounds moved" in b for b in bad), salt


def test_run_rho_is_the_parallel_composition_of_the_rounds() -> None:
    gen = np.random.default_rng(3)
    d, n = 12, 3000
    p = [0.5, 0.9, 0.2, 0.05, 0.01, 0.0] * 2
    rows = (gen.random((n, d)) < np.array(p)).astype(np.int64)
    rho = Fraction(1, 3)
    for plan, runner in ((SamplerPlan.build(d, n, rho, Fraction(1, 2), enforce=False), run_sampler),
                         (LearnerPlan.build(d, n, rho, Fraction(1, 2), Fraction(1, 10), enforce=False), run_learner)):
        run = runner(plan, rd.RowsOracle(rows, range(n), b"x" * 16, plan.batches), SeededRandom(2))
        per_round = [Fraction(r["rho_substitute"]) for r in run.rounds]
        assert all(x <= rho for x in per_round)
        stmts = [PrivacyStatement(ZCDP(x), Substitute(n), "round") for x in per_round]
        assert parallel_statements(stmts).rho == max(per_round)
        for r in run.rounds:
            assert Fraction(r["rho_add_remove"]) <= Fraction(r["rho_substitute"])
        # disjoint slices: no two rounds read a common hash batch
        spans = sorted(tuple(r["batches"]) for r in run.rounds)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert AddRemove(n).n == n
