"""Issue 25, section 3: outputs that fit a notebook, on one real release of every registered mechanism.

``to_pandas()`` for every kind (floats to read, the exact strings beside them), ``_repr_html_`` for releases
and for ``Session``, ``s.remaining`` printed as numbers, ``sample(k, rng)`` with any generator, and adaptive
answers with floats beside their exact Fractions.
"""

from __future__ import annotations

import random
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpspark.lookup import open_release
from dpspark.rng import SeededRandom
from tests.support.every_kind import MECHANISMS, release_of

LONG = re.compile(r"\d{21,}")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebook")


def _frac(text: str | None) -> Fraction | None:
    return None if text is None else Fraction(text)


def _close(a: float, b: Fraction) -> bool:
    return abs(Fraction(a) - b) <= abs(b) * Fraction(1, 10**12) + Fraction(1, 10**300)


# --- to_pandas for every kind ------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_kind_has_a_frame(root: Path, mechanism: str) -> None:
    rel = open_release(release_of(mechanism, root))
    frame = rel.to_pandas(["Paris", "Oslo"]) if rel.kind == "compact" else rel.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame.columns) >= 2
    if rel.kind != "sparse" or len(frame):  # a small sparse release may hold no bin: the frame is still typed
        assert len(frame) >= 1


def test_answers_frame_has_floats_and_the_exact_strings(root: Path) -> None:
    rel = open_release(release_of("bounded_noise", root))
    frame = rel.to_pandas()
    assert frame["value"].dtype == np.float64 and frame["value_exact"].dtype == object
    for _, row in frame.iterrows():
        exact = rel.row(row["name"])
        for col in ("value", "R", "bound95", "conditional_bound"):
            assert _frac(row[f"{col}_exact"]) == exact[col]
            assert (exact[col] is None and pd.isna(row[col])) or _close(row[col], exact[col])


def test_distribution_frame(root: Path) -> None:
    rel = open_release(release_of("product_learner", root))
    frame = rel.to_pandas()
    assert list(frame.columns) == ["column", "q", "q_exact", "error_bar", "error_bar_exact", "flipped"]
    assert [Fraction(q) for q in frame["q_exact"]] == rel.q and list(frame["column"]) == rel.columns
    assert all(_close(f, q) for f, q in zip(frame["q"], rel.q))


def test_sample_frame_lists_every_sample(root: Path) -> None:
    for mechanism in ("kary_sampler", "bernoulli_sampler", "product_sampler"):
        rel = open_release(release_of(mechanism, root))
        frame = rel.to_pandas()
        assert list(frame.columns) == ["batch", *rel.columns] and list(frame["batch"]) == list(range(rel.batches))
        rows = [r if isinstance(r, list) else [r] for r in rel.samples()]
        assert frame[rel.columns].values.tolist() == rows


def test_gaussian_frame_holds_the_released_mean_and_covariance(root: Path) -> None:
    rel = open_release(release_of("gaussian_learner", root))
    frame = rel.to_pandas()
    assert list(frame.columns) == ["column", "mean", "cov_a", "cov_b"]
    assert np.array_equal(frame["mean"].to_numpy(), rel.mean())
    assert np.array_equal(frame[["cov_a", "cov_b"]].to_numpy(), rel.covariance())
    assert "mean" not in open_release(release_of("gaussian_covariance", root)).to_pandas().columns


def test_groups_frame_has_the_exact_strings_beside_the_floats(root: Path) -> None:
    rel = open_release(release_of("groups", root))
    frame = rel.to_pandas()
    for _, row in frame.iterrows():
        entries = rel.lookup(row["g"])
        for name, e in entries.items():
            assert _frac(row[f"{name}_exact"]) == e.value and _frac(row[f"{name}_error_exact"]) == e.error
            assert _close(row[f"{name}_confidence"], e.confidence)


# --- HTML views ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_release_renders_in_a_notebook(root: Path, mechanism: str) -> None:
    rel = open_release(release_of(mechanism, root))
    page = rel._repr_html_()
    assert page.startswith("<div>") and "<b>Privacy</b>" in page and "<b>Accuracy</b>" in page
    assert not LONG.search(page)
    if rel.kind not in ("compact", "sparse"):
        assert 'class="dataframe"' in page  # the values
    if rel.kind == "sparse":
        assert "counted" in page and "error_bar" in page or "hidden" in page


# --- the session ---------------------------------------------------------------------------------------------
@pytest.fixture()
def session() -> object:
    import dpspark

    data = pd.DataFrame({"u": range(300), "city": [["Oslo", "Lima", "Rome"][i % 3] for i in range(300)]})
    return dpspark.Session(data, max_units=1000, unit_column="u", rng=SeededRandom(b"nb"),
                           budget={"epsilon": "2", "delta": "1e-8"})


def test_remaining_prints_as_numbers(session: object, tmp_path: Path) -> None:
    s = session
    assert str(s.remaining) == "eps = 2, delta = 1e-8"
    s.histogram(keys=["city"], universe={"kind": "string", "max_bytes": 8}, mechanism="stability",
                epsilon="1/2", delta="1e-9", output=tmp_path / "h")
    left = s.remaining
    assert str(left) == "eps = 1.5, delta = 9e-9" and repr(left) == "budget left: eps = 1.5, delta = 9e-9"
    assert "ApproxDP" not in repr(left) and "LogEpsilon" not in repr(left)
    assert left == s.budget.remaining and left.measure == s.budget.remaining  # the exact measure, one step away
    assert left.epsilon.as_fraction() == Fraction(3, 2) and left.delta == Fraction(9, 10**9)
    page = s._repr_html_()
    for piece in ("spent</th><td style='text-align:left'>eps = 0.5, delta = 1e-9",
                  "left</th><td style='text-align:left'>eps = 1.5, delta = 9e-9", str(tmp_path / "h")):
        assert piece in page
    assert "left eps = 1.5, delta = 9e-9; 1 release(s)" in repr(s)


def test_adaptive_answers_carry_floats_beside_the_fractions(session: object) -> None:
    a = session.answers(k=2, epsilon="1", delta="1e-9")
    out = a.answer({"name": "rows", "kind": "count"})
    assert isinstance(out["value"], Fraction) and out["value_float"] == float(out["value"])
    assert out["R_float"] == float(out["R"]) and out["bound95_float"] == float(out["bound95"])
    keys = list(out)
    assert keys.index("value_float") == keys.index("value") + 1  # beside it
    assert a.answered[-1] is out


# --- sample(k, rng) with any generator -----------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["product_learner", "gaussian_learner"])
def test_sample_takes_any_generator(root: Path, mechanism: str) -> None:
    rel = open_release(release_of(mechanism, root))
    d = len(rel.columns)
    for rng in (7, random.Random(7), np.random.default_rng(7), np.random.RandomState(7), SeededRandom(b"7"), None):
        rows = rel.sample(5, rng)
        assert rows.shape == (5, d)
    assert np.array_equal(rel.sample(50, 11), rel.sample(50, 11))  # an int seed repeats
    assert np.array_equal(rel.sample(50, random.Random(3)), rel.sample(50, random.Random(3)))
    assert np.array_equal(rel.sample(50, SeededRandom(b"s")), rel.sample(50, SeededRandom(b"s")))
    for bad in ("seed", 1.5, True):
        with pytest.raises(TypeError, match="rng must be"):
            rel.sample(2, bad)


def test_product_sample_from_random_random_follows_q(root: Path) -> None:
    """Post-processing with random.Random (which crashed with AttributeError 'bits'): the law is still q."""
    rel = open_release(release_of("product_learner", root))
    rows = rel.sample(20000, random.Random(1))
    for j, q in enumerate(rel.q):
        # 6 sigma of a binomial mean: a false alarm has probability < 2e-9 per column
        assert abs(Fraction(int(rows[:, j].sum()), 20000) - q) <= 6 * (float(q * (1 - q)) / 20000) ** 0.5 + 1e-12
