"""Timing side channels (docs/balcer-vadhan-notes.md §E10): step counts through the public APIs stay within public bounds.

* The counting mechanisms' binary search runs exactly ceil(log2(n+1)) CDF
  evaluations for every count c and every u (counted by wrapping ``_cdf``,
  and by counting loop-body executions on FastSample's inlined table path).
* The histogram algorithms' draws, noisy counts, distinct-sampling rounds and
  order-statistic levels never exceed the documented public bounds, on
  neighbouring inputs including the worst case |supp(D)| = n.
* CompactHistogram: noisy counts, target draws and interpolation points are
  |S| <= n, the coefficients always l = n + 1, lookups ceil(log2(n+1)) CDF
  steps per key; padding (the audit pipeline's ``min_seconds``) covers the
  whole construction.
* With ``min_seconds`` padding, wall time is >= the padded bound on neighbours.
"""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from dpspark.audit import CountingRandom, count_calls, count_line_hits, histogram_step_bounds
from dpspark.noise import FastSample, GeoSample
from dpspark.noise.counting_base import CountingMechanism
from dpspark.mechanisms.histogram import basic_histogram, pure_sparse_histogram, sparse_histogram, stability_histogram
from dpspark.mechanisms.histogram.distinct_fast import CHUNK, _count_below, search_rounds
from dpspark.mechanisms.histogram.ordstat import approx_bin_sample
from dpspark.mechanisms.histogram.pure_sparse import mixing_delta
from dpspark.mechanisms.histogram.sparse import s_bits_for
from dpspark.rng import SeededRandom


def ceil_log2(m: int) -> int:
    """Smallest r with 2^r >= m, by exact integer search."""
    r = 0
    while (1 << r) < m:
        r += 1
    return r


def probe_points(mech: CountingMechanism) -> list[int]:
    d = mech.d
    return sorted({1, 2, d // 3, d // 2, d - 1, d})


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 1000])
def test_geosample_search_always_makes_ceil_log2_n_plus_1_cdf_calls(n: int) -> None:
    mech = GeoSample(n=n, epsilon="1")
    rng = SeededRandom(n)
    for c in sorted({0, 1, n // 2, n - 1, n}):
        for u in probe_points(mech):
            with count_calls(mech, "_cdf") as calls:
                mech.sample(c, u)
            assert calls["_cdf"] == ceil_log2(n + 1) == mech.rounds
        with count_calls(mech, "_cdf") as calls:
            mech.draw(c, rng)
        assert calls["_cdf"] == ceil_log2(n + 1)


@pytest.mark.parametrize("n", [5, 6, 40, 1000, 10**6])
def test_fastsample_search_rounds_are_fixed_on_both_paths(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    mech = FastSample(n=n, exp_eps=Fraction(3, 2), gamma="1/1000", t=min(n, 5))
    assert mech.fallback is None
    rng = SeededRandom(n)
    cs = sorted({0, 1, n // 2, n - 1, n})
    # the inlined table path: count executions of the search loop's body
    expected = {}
    with count_line_hits([(FastSample._search, "probe = pos + step")]) as hits:
        for c in cs:
            for u in probe_points(mech):
                before = hits["FastSample._search"]
                expected[c, u] = mech.sample(c, u)
                assert hits["FastSample._search"] - before == ceil_log2(n + 1)
    # the generic path (no table): count the CDF evaluations themselves
    monkeypatch.setattr(mech, "_table", None)
    for c in cs:
        for u in probe_points(mech):
            with count_calls(mech, "_cdf") as calls:
                assert mech.sample(c, u) == expected[c, u]
            assert calls["_cdf"] == ceil_log2(n + 1)
        with count_calls(mech, "_cdf") as calls:
            mech.draw(c, rng)
        assert calls["_cdf"] == ceil_log2(n + 1)


def test_line_counter_sees_a_data_dependent_loop() -> None:
    """The instrument itself can fail: a loop that runs c times is counted c times."""

    def leaky(c: int) -> int:
        total = 0
        for _ in range(c):
            total += 1  # marker
        return total

    for c in (0, 3, 7):
        with count_line_hits([(leaky, "# marker")]) as hits:
            leaky(c)
        assert hits[leaky.__qualname__] == c


# --- histogram algorithms ---------------------------------------------------------------------------

N, SIZE = 3, 16
NEIGHBOURS = [({0: 1, 5: 2}, {0: 1, 5: 1}), ({1: 1, 2: 1, 3: 1}, {1: 1, 2: 1}), ({7: 1}, {})]
MECH = GeoSample(n=N, exp_eps=Fraction(2))


def instrumented(call, mech: CountingMechanism, seed: int):  # type: ignore[no-untyped-def]
    rng = CountingRandom(SeededRandom(seed))
    with count_calls(mech, "draw") as draws:
        call(rng)
    return draws["draw"], rng.total


@pytest.mark.parametrize("pair", NEIGHBOURS)
def test_basic_and_stability_loop_counts(pair: tuple[dict[int, int], dict[int, int]]) -> None:
    bins = [0, 1, 5, 7, 9]
    b = histogram_step_bounds("basic", N, SIZE, len(bins))
    s = histogram_step_bounds("stability", N, SIZE)
    seen = []
    for data in pair:
        draws, rand = instrumented(lambda r: basic_histogram(data, bins, SIZE, N, MECH, r), MECH, 1)
        assert draws == rand == b.noisy_counts == len(bins)  # exactly |X'|, whatever the data
        draws, rand = instrumented(lambda r: stability_histogram(data, SIZE, N, MECH, "1/4", r), MECH, 2)
        assert draws == rand == len(data) <= s.noisy_counts  # one per nonzero bin, at most n
        seen.append(draws)
    assert abs(seen[0] - seen[1]) <= 1  # loops over nonzero bins may differ by one between neighbours


@pytest.mark.parametrize("pair", NEIGHBOURS)
@pytest.mark.parametrize("algorithm", ["sparse", "pure_sparse"])
def test_sparse_loop_counts_within_public_bounds(pair: tuple[dict[int, int], dict[int, int]], algorithm: str) -> None:
    bound = histogram_step_bounds(algorithm, N, SIZE)
    delta = Fraction(1, 4)
    sd = delta if algorithm == "sparse" else mixing_delta(MECH.exp_eps, Fraction(1, 2), SIZE, N)
    s = 1 << s_bits_for(N, SIZE, sd)
    for seed, data in enumerate(pair):
        levels: list[tuple[int, int]] = []

        def sampler(m: int, num: int, den: int, t: int, u: int) -> int:
            with count_line_hits([(approx_bin_sample, "total += b[ell]")]) as inner:
                out = approx_bin_sample(m, num, den, s, t, u)
            levels.append((t, inner["approx_bin_sample"]))
            return out

        if algorithm == "sparse":
            call = lambda r: sparse_histogram(data, SIZE, N, MECH, delta, r, bin_sampler=sampler, beta="9/10")
        else:
            call = lambda r: pure_sparse_histogram(data, SIZE, N, MECH, "1/2", r, bin_sampler=sampler, beta="9/10")
        draws, rand = instrumented(call, MECH, seed)
        assert draws == len(data) <= bound.noisy_counts
        assert rand <= bound.random_draws
        assert 1 <= len(levels) <= bound.order_statistic_levels
        assert all(iterations <= 2 * t for t, iterations in levels)  # ApproxBinSample's doubling: public bound 2t
        # n+1 distinct empty bins (chunked Alg A.3), each exactly search_rounds(B) in-chunk rounds
        with count_line_hits([(_count_below, "mid = (lo + hi) >> 1")]) as rounds:
            call(SeededRandom(seed))
        assert rounds["_count_below"] == (N + 1) * search_rounds(CHUNK)


@pytest.mark.parametrize("algorithm", ["sparse", "pure_sparse"])
def test_padding_holds_wall_time_at_the_bound_on_neighbours(algorithm: str) -> None:
    pad = 0.25
    for data in ({0: 1, 5: 2}, {0: 1, 5: 1}, {}):
        for min_seconds in (None, pad):
            if algorithm == "sparse":
                call = lambda: sparse_histogram(data, SIZE, N, MECH, "1/4", SeededRandom(0), beta="9/10", min_seconds=min_seconds)
            else:
                call = lambda: pure_sparse_histogram(data, SIZE, N, MECH, "1/2", SeededRandom(0), beta="9/10", min_seconds=min_seconds)
            start = time.monotonic()
            call()
            elapsed = time.monotonic() - start  # report
            if min_seconds is None:
                assert elapsed < pad  # the padding, not the work, is what the padded run measures
            else:
                assert elapsed >= pad


# --- compact histogram ------------------------------------------------------------------------------

COMPACT_N, COMPACT_SIZE = 4, 32
COMPACT_NEIGHBOURS = [
    ({0: 1, 5: 2}, {0: 1, 5: 1}),
    ({1: 1, 2: 1, 3: 1, 9: 1}, {1: 1, 2: 1, 3: 1}),  # |S| = n, the worst case
    ({7: 1}, {}),
]


@pytest.mark.parametrize("pair", COMPACT_NEIGHBOURS)
def test_compact_loop_counts_within_public_bounds(pair, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Draws, target draws, interpolation points and coefficients never exceed |S| <= n, l = n + 1."""
    import dpspark.mechanisms.compact.algorithm as compact_module
    from dpspark.mechanisms.compact import compact_histogram, compact_mechanism

    bound = histogram_step_bounds("compact", COMPACT_N, COMPACT_SIZE)
    mech = compact_mechanism(COMPACT_N, COMPACT_SIZE, "1")
    seen: dict[str, int] = {}
    real_poly, real_targets = compact_module.conditioned_polynomial, compact_module.draw_targets

    def poly(field, ell, points, values, rng):  # type: ignore[no-untyped-def]
        seen["points"], seen["ell"] = points.shape[0], ell
        return real_poly(field, ell, points, values, rng)

    def targets(sampler, noisy, rng):  # type: ignore[no-untyped-def]
        seen["targets"] = len(noisy)
        with count_calls(sampler, "cdf") as cdf_calls:
            out = real_targets(sampler, noisy, rng)
        assert cdf_calls["cdf"] == 2 * len(noisy)  # one preimage = two CDF values per target
        return out

    monkeypatch.setattr(compact_module, "conditioned_polynomial", poly)
    monkeypatch.setattr(compact_module, "draw_targets", targets)
    sizes = []
    for seed, data in enumerate(pair):
        rng = CountingRandom(SeededRandom(seed))
        with count_calls(mech, "draw") as draws:
            rel = compact_histogram(data, COMPACT_SIZE, COMPACT_N, mech, rng, epsilon2="1/10")
        assert draws["draw"] == len(data) == seen["targets"] == seen["points"] <= bound.constrained_points
        assert rng.calls["bits"] >= 1 and rng.total <= bound.random_draws
        assert seen["ell"] == rel.coefficients.shape[0] == bound.coefficients == COMPACT_N + 1  # never depends on |S|
        # lookups: exactly ceil(log2(n+1)) CDF evaluations per key, data bin or not
        with count_calls(rel.sampler, "cdf") as cdf_calls:
            rel.lookup([0, 7, 31])
        assert cdf_calls["cdf"] == 3 * ceil_log2(COMPACT_N + 1)
        sizes.append(len(data))
    assert abs(sizes[0] - sizes[1]) <= 1  # the loop over S differs by at most one between neighbours


def test_compact_padding_holds_wall_time_at_the_bound_on_neighbours() -> None:
    """What is padded: compact_pipeline(min_seconds=...) pads the whole construction (noisy counts, targets,
    interpolation) from before the call; lookups of the published polynomial are public post-processing and
    are not padded. Unpadded, the work is well under the pad; padded, every neighbour takes >= the pad."""
    from dpspark.audit import compact_pipeline
    from dpspark.mechanisms.compact import compact_mechanism

    pad = 0.25
    mech = compact_mechanism(COMPACT_N, COMPACT_SIZE, "1")
    for pair in COMPACT_NEIGHBOURS:
        for data in pair:
            for min_seconds in (None, pad):
                run = compact_pipeline(COMPACT_SIZE, COMPACT_N, mech, [0], epsilon2="1/10", min_seconds=min_seconds)
                start = time.monotonic()
                run(data, SeededRandom(0))
                elapsed = time.monotonic() - start  # report
                if min_seconds is None:
                    assert elapsed < pad
                else:
                    assert elapsed >= pad
