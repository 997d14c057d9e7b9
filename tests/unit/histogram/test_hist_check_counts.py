"""check_counts' vectorised int64 path gives exactly the exact Python path's result and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from dpspark.mechanisms.histogram.inputs import check_counts


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_path_equals_the_exact_path(seed: int) -> None:
    gen = np.random.default_rng(seed)  # test data only
    size = [500, 10**6, 2**62][seed % 3]
    idx = gen.choice(min(size, 10**6), size=400, replace=False).astype(np.int64)
    cnt = gen.integers(0, 5, size=400)
    fast = check_counts((idx, cnt), size, 10**4)
    exact = check_counts(dict(zip(idx.tolist(), cnt.tolist())), size, 10**4)  # a mapping takes the exact path
    assert fast == exact
    assert check_counts((idx.tolist(), cnt.tolist()), size, 10**4) == exact


def test_vectorised_path_refuses_like_the_exact_path() -> None:
    for idx, cnt, size, n, msg in [
        ([1, 1], [1, 1], 10, 5, "distinct"),
        ([1, 10], [1, 1], 10, 5, "outside"),
        ([1, 2], [1, -1], 10, 5, ">= 0"),
        ([1, 2], [3, 3], 10, 5, "total more"),
        ([1, 2], [9, 0], 10, 5, "total more"),
    ]:
        for form in (lambda a: a, np.asarray):
            with pytest.raises(ValueError, match=msg):
                check_counts((form(idx), form(cnt)), size, n)
    with pytest.raises(TypeError):
        check_counts(([1, 2], [True, 1]), 10, 5)
    big = [2**100, 2**100 + 1]  # beyond int64: the exact path, same result form
    assert check_counts((big, [1, 0]), 2**101, 5) == ([2**100], [1])
