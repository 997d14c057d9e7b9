"""Exact privacy checks of the product sampler and learner rounds (dpspark.mechanisms.product).

* every group's l2 sensitivity, by enumerating all pairs of records at every split into groups and every
  ceiling (the truncation boundary included), equals the stated min(|G|, 2C_G) (Substitute) and
  min(|G|, C_G) (AddRemove); every shift is in {-1, 0, 1}; the count moves by 0 under substitution and
  by 1 under add/remove. MUTANT: one ceiling on the union of the groups - caught;
* a round's certified rho is the sum of the per-coordinate certified rho over the worst shift vector
  (groups and count), and is <= its budget under both relations. MUTANT: the count left out of the
  calibration (its rho unpaid under add/remove) - caught;
* the learner: on every neighbour of a small dataset (substitute and add/remove), every round moves (they all
  read the same units) and the sum over rounds of the certified rho of the actual shift vectors is <= rho
  (sequential composition). MUTANT: every ladder round calibrated to the whole ladder budget - caught;
* the sampler: a unit moves the ladder's rounds or the sampling round, never both (disjoint batch parts),
  and each part's rho is <= rho. MUTANTS: batches chosen by the record's content, and a sampling round
  that reads the ladder's batches too - caught.
"""

from __future__ import annotations

import hashlib
import itertools
from fractions import Fraction

import numpy as np
import pytest

from dpspark.noise.dgauss import vector_rho
from dpspark.mechanisms.product import ladder as ld
from dpspark.mechanisms.product import rounds as rd
from dpspark.mechanisms.product.learner import LearnerPlan, run_learner
from dpspark.mechanisms.product.sampler import SamplerPlan, run_sampler
from dpspark.rng import SeededRandom


def _records(size: int) -> list[tuple[int, ...]]:
    return list(itertools.product((0, 1), repeat=size))


def _splits(size: int):  # type: ignore[no-untyped-def]
    """Every composition of ``size`` into consecutive group sizes."""
    if size == 0:
        yield ()
        return
    for first in range(1, size + 1):
        for rest in _splits(size - first):
            yield (first,) + rest


def _union_truncate(rows: np.ndarray, query: rd.RoundQuery) -> np.ndarray:
    """MUTANT: one ceiling (the sum of the groups') on the popcount of all active coordinates."""
    y = rows[:, list(query.active)].astype(np.int64) ^ np.asarray(query.flip, dtype=np.int64)
    return y * (y.sum(axis=1) <= sum(c for _, c in query.parts))[:, None]


def _worst_group_shifts(recs: np.ndarray, query: rd.RoundQuery, truncate) -> tuple[list[int], list[int]]:  # type: ignore[no-untyped-def]
    """(max over substitutions, max over add/remove) of each group's ||shift||^2 (exact enumeration)."""
    y = truncate(recs, query)
    sub, add, start = [], [], 0
    for size, _ in query.parts:
        part = y[:, start:start + size]
        diff = part[:, None, :] - part[None, :, :]
        sub.append(int((diff**2).sum(axis=2).max()))
        add.append(int((part**2).sum(axis=1).max()))
        assert set(np.unique(diff)) <= {-1, 0, 1}
        start += size
    return sub, add


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_group_sensitivity_is_exact_at_every_split_and_ceiling(size: int) -> None:
    recs = np.array(_records(size), dtype=np.int64)
    for split in _splits(size):
        for ceils in itertools.product(*[range(0, g + 1) for g in split]):
            for flip in ((False,) * size, tuple(bool(i % 2) for i in range(size))):
                q = rd.RoundQuery(0, "t", tuple(range(size)), flip, 0, 0, 1, 1, groups=tuple(zip(split, ceils)),
                                  count=True)
                sub, add = _worst_group_shifts(recs, q, rd.truncate)
                assert sub == [rd.sensitivity_sq(g, c) for g, c in zip(split, ceils)]
                assert add == [rd.sensitivity_sq(g, c, "add_remove") for g, c in zip(split, ceils)]
                # the count: a substituted record leaves it, an added one moves it by one
                oracle = rd.RowsOracle(recs[:1], [0], b"k" * 16, 1)
                assert oracle(q)[-1] == 1 and rd.RowsOracle(recs[1:2], [5], b"k" * 16, 1)(q)[-1] == 1


def test_mutant_union_ceiling_is_caught() -> None:
    recs = np.array(_records(6), dtype=np.int64)
    q = rd.RoundQuery(0, "t", tuple(range(6)), (False,) * 6, 0, 0, 1, 1, groups=((3, 1), (3, 1)))
    sub, _ = _worst_group_shifts(recs, q, _union_truncate)
    assert sub != [rd.sensitivity_sq(3, 1), rd.sensitivity_sq(3, 1)]


@pytest.mark.parametrize("parts,rho", [(((3, 1), (5, 2)), Fraction(1, 2)), (((8, 3),), Fraction(1, 50)),
                                       (((64, 64),), Fraction(2)), (((10, 10), (30, 4), (2, 1)), Fraction(1, 3))])
def test_round_rho_is_the_sum_over_the_worst_shift_vector(parts: tuple[tuple[int, int], ...], rho: Fraction) -> None:
    """Groups calibrated to shares of rho (as the final rounds are), plus the count: the certified rho of the
    worst shift vector of each relation is the stated sum and is <= rho."""
    radius = 1000
    shares = [Fraction(k + 1) for k in range(len(parts))]
    sigmas = tuple(rd.group_sigma(s, c, rho * w / sum(shares), radius) for (s, c), w in zip(parts, shares))
    s0 = rd.count_sigma(rho, radius)
    noise = rd.RoundNoise(parts, sigmas, s0, radius)
    for rel in ("substitute", "add_remove"):
        worst = sum((vector_rho(rd.gaussian(sg, radius), [1] * rd.sensitivity_sq(s, c, rel))
                     for (s, c), sg in zip(parts, sigmas)), Fraction(0))
        worst += rd.gaussian(s0, radius).zcdp_rho(1) if rel == "add_remove" else 0
        assert noise.rho(rel) == worst <= rho
    # MUTANT: the groups calibrated without the count's reserve while the round releases the count
    bad = tuple(rd.group_sigma(s, c, rho * w / sum(shares), radius, Fraction(0)) for (s, c), w in zip(parts, shares))
    mutant = rd.RoundNoise(parts, bad, s0, radius)
    untruncated = all(2 * c >= s for s, c in parts)  # only there is the add/remove budget fully used
    assert not untruncated or mutant.rho("add_remove") > rho


# --- runs: every neighbour of a small dataset ---------------------------------------------------
def _noises(rounds: list[dict], radius: int) -> list[rd.RoundNoise]:  # type: ignore[type-arg]
    return [rd.RoundNoise(tuple((g["size"], g["ceiling"]) for g in r["groups"]),
                          tuple(Fraction(g["sigma"]) for g in r["groups"]),
                          None if r["count_sigma"] is None else Fraction(r["count_sigma"]), radius)
            for r in rounds]


def _rho_of_shifts(shifts: np.ndarray, q: rd.RoundQuery, noise: rd.RoundNoise, count_shift: int) -> np.ndarray:
    """Certified rho of each row of ``shifts`` (entries in {-1, 0, 1}) under the round's noise, plus the count."""
    assert set(np.unique(shifts)) <= {-1, 0, 1}
    out = np.zeros(shifts.shape[0], dtype=object)
    start = 0
    for (size, _), sigma in zip(q.parts, noise.sigmas):
        per = rd.gaussian(sigma, noise.radius).zcdp_rho(1)
        out = out + (shifts[:, start:start + size] ** 2).sum(axis=1).astype(object) * per
        start += size
    if q.count and count_shift:
        out = out + rd.gaussian(noise.sigma0, noise.radius).zcdp_rho(count_shift)
    return out


@pytest.mark.parametrize("mutant", [False, True])
def test_learner_rounds_compose_sequentially(monkeypatch: pytest.MonkeyPatch, mutant: bool) -> None:
    """Every substitution of a record by any of the 2^d records, every removal and every addition: each round's
    shift (the per-record contributions of the reference truncation, the unit count) and the sum over the
    rounds of their certified rho, against the stated sequential total (the oracle's sums are checked to be
    those per-record contributions on a sample of neighbours)."""
    gen = np.random.default_rng(5)
    rows = (gen.random((6, 9)) < np.array([0.6, 0.3, 0.1, 0.05, 0.5, 0.2, 0.0, 0.9, 0.02])).astype(np.int64)
    rho = Fraction(1, 2)
    if mutant:  # every ladder round calibrated to the whole ladder budget (parallel accounting)
        monkeypatch.setattr(ld, "ladder_weights", lambda d, K, L: [Fraction(1)] * K)
    n, d = rows.shape
    plan = LearnerPlan.build(d, n + 1, rho, Fraction(1), Fraction(1, 2), batches=16, enforce=False)
    oracle = rd.RowsOracle(rows, range(n), b"k" * 16, 16)
    run = run_learner(plan, oracle, SeededRandom(3))
    queries, noises = list(oracle.queries), _noises(run.rounds, plan.n)
    assert len(queries) >= 3 and all(q.batch_lo == 0 and q.batch_hi == q.batches for q in queries)
    stated = {rel: sum((nz.rho(rel) for nz in noises), Fraction(0)) for rel in ("substitute", "add_remove")}
    every = np.array(_records(d), dtype=np.int64)
    worst = Fraction(0)
    for i in range(n):
        sub = sum(_rho_of_shifts(rd.truncate(every, q) - rd.truncate(rows[i:i + 1], q), q, nz, 0)
                  for q, nz in zip(queries, noises))
        remove = sum(_rho_of_shifts(-rd.truncate(rows[i:i + 1], q), q, nz, -1) for q, nz in zip(queries, noises))
        worst = max(worst, max(sub), remove[0])
        assert max(sub) <= stated["substitute"] and remove[0] <= stated["add_remove"]
    add = sum(_rho_of_shifts(rd.truncate(every, q), q, nz, 1) for q, nz in zip(queries, noises))
    assert max(add) <= stated["add_remove"]
    worst = max(worst, max(add))
    assert (worst > rho) == mutant, (worst, rho, stated)
    assert mutant or max(stated.values()) <= rho
    # the oracle's sums are the per-record contributions: a few neighbours through the real oracle
    for i, new in ((0, every[-1]), (3, every[5]), (5, every[0])):
        other = rows.copy()
        other[i] = new
        o = rd.RowsOracle(other, range(n), b"k" * 16, 16)
        for q in queries:
            want = np.array(oracle(q)) + np.concatenate([(rd.truncate(other[i:i + 1], q) - rd.truncate(rows[i:i + 1], q))[0],
                                                         [0] if q.count else []]).astype(np.int64)
            assert list(o(q)) == want.tolist()


def _neighbours(rows: np.ndarray):  # type: ignore[no-untyped-def]
    """(kind, rows', ids') for every substitution, every removal and every addition of one record."""
    n, d = rows.shape
    ids = list(range(n))
    for i in range(n):
        for new in _records(d):
            other = rows.copy()
            other[i] = new
            yield "substitute", other, ids
        yield "add_remove", np.delete(rows, i, axis=0), ids[:i] + ids[i + 1:]
    for new in _records(d):
        yield "add_remove", np.vstack([rows, np.array(new)]), ids + [n]


def _content_hash_oracle(rows: np.ndarray, batches: int, salt: bytes = b""):  # type: ignore[no-untyped-def]
    """MUTANT: batch = hash of the record's content (not of its unit id)."""
    def call(query: rd.RoundQuery) -> list[int]:
        b = np.array([int.from_bytes(hashlib.blake2b(salt + bytes(r.tolist())).digest()[:8], "big") % batches
                      for r in rows], dtype=np.int64)
        sel = (b >= query.batch_lo) & (b < query.batch_hi)
        out = [int(v) for v in rd.truncate(rows[sel], query).sum(axis=0)]
        return out + [int(sel.sum())] if query.count else out
    return call


def _sampler_queries(rows: np.ndarray, overlap: bool = False) -> tuple[list[rd.RoundQuery], SamplerPlan]:
    n, d = rows.shape
    plan = SamplerPlan.build(d, n + 1, Fraction(1, 2), Fraction(1, 2), batches=64, enforce=False,
                             schedule=(Fraction(1, 2), 2))
    oracle = rd.RowsOracle(rows, range(n), b"k" * 16, 64)
    run_sampler(plan, oracle, SeededRandom(1))
    queries = oracle.queries
    if overlap:  # MUTANT: the sampling round reads every batch, the ladder's included
        last = queries[-1]
        queries = queries[:-1] + [rd.RoundQuery(last.index, last.name, last.active, last.flip, last.ceiling, 0,
                                                last.batches, last.batches, last.groups, last.count)]
    return queries, plan


def _parts_moved(rows: np.ndarray, queries: list[rd.RoundQuery], make) -> list[str]:  # type: ignore[no-untyped-def]
    """Every neighbour: the parts (ladder, sampling) whose sums or counts move; must be at most one."""
    base = make(rows, list(range(rows.shape[0])))
    sums = [list(base(q)) for q in queries]
    bad = []
    for kind, other, ids in _neighbours(rows):
        o = make(other, ids)
        moved = {("sampling" if q.name.startswith("sampling") else "ladder") for q, s in zip(queries, sums)
                 if list(o(q)) != s}
        if len(moved) > 1:
            bad.append(f"{kind}: both parts moved")
    return bad


def test_a_unit_moves_the_ladder_or_the_sampling_round_only() -> None:
    gen = np.random.default_rng(7)
    rows = (gen.random((8, 3)) < np.array([0.6, 0.3, 0.1])).astype(np.int64)
    queries, plan = _sampler_queries(rows)
    assert len(queries) >= 3 and plan.split > 0
    assert _parts_moved(rows, queries, lambda r, ids: rd.RowsOracle(r, ids, b"k" * 16, 64)) == []


def test_mutants_content_hash_and_overlapping_parts_are_caught() -> None:
    gen = np.random.default_rng(7)
    rows = (gen.random((8, 3)) < np.array([0.6, 0.3, 0.1])).astype(np.int64)
    queries, _ = _sampler_queries(rows)
    for salt in range(4):  # whatever the content hash, some substitution moves a record across the parts
        assert any("both" in b for b in _parts_moved(rows, queries, lambda r, ids: _content_hash_oracle(r, 64, bytes([salt]))))
    overlap, _ = _sampler_queries(rows, overlap=True)
    assert _parts_moved(rows, overlap, lambda r, ids: rd.RowsOracle(r, ids, b"k" * 16, 64))


def test_sampler_parts_each_within_rho() -> None:
    gen = np.random.default_rng(3)
    d, n = 12, 3000
    p = [0.5, 0.9, 0.2, 0.05, 0.01, 0.0] * 2
    rows = (gen.random((n, d)) < np.array(p)).astype(np.int64)
    rho = Fraction(1, 3)
    plan = SamplerPlan.build(d, n, rho, Fraction(1, 2), enforce=False, schedule=(Fraction(3, 8), 3))
    run = run_sampler(plan, rd.RowsOracle(rows, range(n), b"x" * 16, plan.batches), SeededRandom(2))
    ladder = [r for r in run.rounds if r["name"].startswith("bucketing")]
    sampling = [r for r in run.rounds if r["name"] == "sampling"]
    for rel in ("rho_substitute", "rho_add_remove"):
        assert sum((Fraction(r[rel]) for r in ladder), Fraction(0)) <= rho
        assert Fraction(sampling[0][rel]) <= rho
    assert {tuple(r["batches"]) for r in ladder} == {(0, plan.split)}
    assert sampling[0]["batches"] == [plan.split, plan.batches]
