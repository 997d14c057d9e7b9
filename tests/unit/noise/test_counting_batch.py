"""Batched exact noise: draw_many is the scalar draw, output for output, and its law is exact.

* Under SeededRandom, draw_many reads the same stream blocks and returns the
  same values as one draw(c, rng) per count (many seeds, sizes, both
  mechanisms, FastSample's GeoSample fallback, large and tiny gamma), with and
  without forced ties (the ``tie_margin`` test hook), so the exact fallback
  path is exercised too.
* Adversarial X exactly at (and one off) every CDF boundary: the batch's
  decisions from 63-bit prefixes agree with the exact big-integer search.
* Under the system generator (different byte order) the law is checked by a
  chi-square test (false-alarm rate <= 1e-6) that rejects a broken batch.
"""

from __future__ import annotations

import dataclasses
import numpy as np
import pytest

from dpspark.audit.timing import CountingRandom
from dpspark.noise import FastSample, GeoSample
from dpspark.noise.counting_base import CountingMechanism
from dpspark.noise.counting_batch import batch_sample
from dpspark.mechanisms.histogram.basic import basic_histogram, noisy_counts
from dpspark.mechanisms.histogram.stability import stability_histogram
from dpspark.rng import PREFIX_BITS, LazyUniforms, SeededRandom, SystemRandom
from tests.support.chisq import chi2_critical
from tests.unit.noise.test_counting_stat import make_bins

MECHS = [
    FastSample(n=1000, epsilon="1/2", gamma="1/5"),
    FastSample(n=10**6, epsilon="1/10", gamma="2^-40"),
    FastSample(n=10**9, epsilon="1", gamma="2^-70"),  # D >= 2^63: the uniform tails always tie
    FastSample(n=5000, epsilon="3", gamma="1/2"),  # tails frequent, decided by floor(x D)
    FastSample(n=100, epsilon="1", gamma="1/2"),
    FastSample(n=5, epsilon="1/2", gamma="1/3"),  # t* >= n: GeoSample fallback
    GeoSample(n=50, epsilon="1/2"),
    GeoSample(n=3, epsilon="2"),
    GeoSample(n=2000, epsilon="1"),  # the window stops before +-n
]
IDS = [f"{m.name}-n{m.n}-{m.exp_eps}-{getattr(m, 'gamma', '')}" for m in MECHS]


def _counts(mech: CountingMechanism, seed: int, size: int) -> np.ndarray:
    cs = np.random.default_rng(seed).integers(0, mech.n + 1, size)  # test inputs, not noise
    cs[: min(size, 3)] = [0, mech.n, mech.n // 2][: min(size, 3)]
    return cs


@pytest.mark.parametrize("mech", MECHS, ids=IDS)
def test_draw_many_equals_the_scalar_sequence_under_the_seeded_stream(mech: CountingMechanism) -> None:
    for seed in range(6):
        for size in (1, 7, 150):
            cs = _counts(mech, seed, size)
            r1, r2 = SeededRandom(seed), SeededRandom(seed)
            expected = [mech.draw(int(c), r1) for c in cs]
            got = mech.draw_many(cs, r2)
            assert got.dtype == np.int64 and got.tolist() == expected
            assert r1._counter == r2._counter and r1.biased_draws == r2.biased_draws
            assert r1.bits(64) == r2.bits(64)  # the stream continues in step


@pytest.mark.parametrize("mech", MECHS, ids=IDS)
@pytest.mark.parametrize("margin", [1 << 58, 1 << 62])
def test_forced_ties_take_the_exact_path_and_agree(mech: CountingMechanism, margin: int) -> None:
    before = mech.batch_ties
    mech.tie_margin = margin
    try:
        for seed in range(3):
            cs = _counts(mech, 100 + seed, 120)
            r1, r2 = SeededRandom(seed), SeededRandom(seed)
            expected = [mech.draw(int(c), r1) for c in cs]
            assert mech.draw_many(cs, r2).tolist() == expected
    finally:
        mech.tie_margin = 0
    assert mech.batch_ties - before > 0


def _boundary_xs(mech: CountingMechanism, c: int, L: int) -> list[int]:
    """X at, just below and just above every point where u = floor(X d / 2^L) + 1 crosses F(z)."""
    xs = {0, (1 << L) - 1}
    zs = range(mech.n) if mech.n <= 1000 else sorted({z for z in range(c - 150, c + 150) if 0 <= z < mech.n} | set(range(0, mech.n, 97)))
    for z in zs:
        f = mech.scaled_cdf(c, z)
        x0 = -((-f << L) // mech.d)  # smallest X with X d >= F(z) 2^L, i.e. M(c, u) > z
        xs |= {x for x in (x0 - 1, x0, x0 + 1, x0 + (1 << (L - PREFIX_BITS)), x0 - (1 << (L - PREFIX_BITS))) if 0 <= x < 1 << L}
    return sorted(xs)


def _boundary_run(mech: CountingMechanism, error: int) -> tuple[int, int]:
    """(mismatches against the exact search, ties) over adversarial X at every CDF boundary."""
    tables = mech._batch_tables()
    assert tables is not None
    L = mech.d.bit_length() + 128
    cs_all = sorted({0, 1, 2, mech.n // 3, mech.n // 2, mech.n - 1, mech.n} & set(range(mech.n + 1)))
    if mech.n > 1000:
        cs_all = [0, mech.n // 2, mech.n]
    bad = ties = 0
    for c in cs_all:
        xs = _boundary_xs(mech, c, L)
        lazy = LazyUniforms(mech.d, L, np.array([x >> (L - PREFIX_BITS) for x in xs], dtype=np.int64), lambda i: xs[i])
        cs = np.full(len(xs), c, dtype=np.int64)
        out, tie = batch_sample(cs, lazy.top, mech.n, tables, error)
        ties += int(tie.sum())
        for i in np.flatnonzero(tie):
            out[i] = mech._search(c, lazy.exact(int(i)))
        expected = [mech.sample(c, ((x * mech.d) >> L) + 1) for x in xs]
        bad += sum(a != b for a, b in zip(out.tolist(), expected))
    return bad, ties


@pytest.mark.parametrize("mech", [m for m in MECHS if m.n <= 5000], ids=[i for m, i in zip(MECHS, IDS) if m.n <= 5000])
def test_prefix_decisions_at_every_cdf_boundary(mech: CountingMechanism) -> None:
    tables = mech._batch_tables()
    assert tables is not None
    bad, ties = _boundary_run(mech, tables.error)
    assert bad == 0 and ties > 0


def test_the_boundary_check_catches_an_understated_error_bound() -> None:
    assert _boundary_run(GeoSample(n=50, epsilon="1/2"), 0)[0] > 0  # mutant: E = 0 instead of 1
    assert _boundary_run(FastSample(n=1000, epsilon="1/2", gamma="1/5"), 0)[0] > 0  # E = 0 instead of 3


def test_plain_int_backend_gives_identical_batches() -> None:
    from dpspark.noise import bigint

    def run() -> list[int]:
        out: list[int] = []
        for mech in (FastSample(n=10**6, epsilon="1/10", gamma="2^-40"), GeoSample(n=300, epsilon="1/2")):
            mech.tie_margin = 1 << 60  # exercise the exact redraws on this backend too
            out += mech.draw_many(_counts(mech, 1, 40), SeededRandom(b"backend")).tolist()
        return out

    with_gmp = run()
    bigint.set_backend("int")
    try:
        with_int = run()
    finally:
        bigint.set_backend("gmpy2")
    assert with_gmp == with_int


def test_draw_many_inputs() -> None:
    mech = MECHS[0]
    assert mech.draw_many([], SeededRandom(1)).tolist() == []
    assert mech.draw_many([3, 4], SeededRandom(1)).tolist() == mech.draw_many(np.array([3, 4], dtype=np.int32), SeededRandom(1)).tolist()
    for bad, err in (([0.5], TypeError), ([True], TypeError), ([-1], ValueError), ([mech.n + 1], ValueError), ([[1]], ValueError)):
        with pytest.raises(err):
            mech.draw_many(bad, SeededRandom(1))


def test_sources_without_lazy_draws_use_the_scalar_loop() -> None:
    mech = MECHS[1]
    cs = _counts(mech, 5, 20)
    wrapped = CountingRandom(SeededRandom(9))
    assert mech.draw_many(cs, wrapped).tolist() == mech.draw_many(cs, SeededRandom(9)).tolist()
    assert wrapped.calls["uniform"] == 20


def test_histograms_use_the_batch_with_the_same_outputs() -> None:
    mech = GeoSample(n=10, epsilon="1")
    counts = {1: 3, 4: 6, 9: 1}
    bins = list(range(12))
    expected = [mech.draw(counts.get(x, 0), r) for r in [SeededRandom(3)] for x in bins]
    assert noisy_counts(bins, counts, mech, SeededRandom(3)) == expected
    assert list(basic_histogram(counts, bins, 16, 10, mech, SeededRandom(3)).counts) == expected
    stab = stability_histogram(counts, 16, 10, FastSample(n=10, epsilon="1", gamma="1/4"), "1/4", SeededRandom(4))
    assert all(type(v) is int for v in stab.counts)


# --- law under the system generator ---------------------------------------------------------------

FALSE_ALARM = 1e-6
DRAWS = 12_000
LAW = FastSample(n=10**6, epsilon="2", gamma="1/4")


def _chi_square(outputs: np.ndarray, c: int) -> tuple[float, float]:
    bins = make_bins(LAW, c)
    starts = np.array([lo for lo, _, _ in bins])
    observed = np.bincount(np.searchsorted(starts, outputs, side="right") - 1, minlength=len(bins))
    stat = sum((o - pr * len(outputs)) ** 2 / (pr * len(outputs)) for o, (_, _, pr) in zip(observed.tolist(), bins))  # analysis only
    return stat, chi2_critical(len(bins) - 1, FALSE_ALARM / 2)


def test_batch_law_under_the_system_generator_chi_square() -> None:
    # two chi-square tests at 5e-7 each: false-alarm rate <= 1e-6 for this function
    for c in (0, LAW.n // 2):
        stat, crit = _chi_square(LAW.draw_many(np.full(DRAWS, c), SystemRandom()), c)
        assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f} at c={c}"


def test_the_law_check_rejects_an_off_by_one_window() -> None:
    broken = FastSample(n=10**6, epsilon="2", gamma="1/4")
    tables = broken._batch_tables()
    assert tables is not None
    broken._batch = dataclasses.replace(tables, jlo=tables.jlo + 1)  # mutant: every in-window output one too high
    c = LAW.n // 2
    stat, crit = _chi_square(broken.draw_many(np.full(DRAWS, c), SeededRandom(b"mutant")), c)
    assert stat > 10 * crit
