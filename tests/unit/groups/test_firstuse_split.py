"""Issue 35 §2: the budget split is vectorised and memoised, and chooses exactly the shares the loop chose."""

from __future__ import annotations

import json
import math
import random

import pytest

from dpspark.mechanisms.groups import split as S


def _loop_reference(parts: int, models: list[dict[int, float]], norms: list[float]) -> list[float]:
    """The split's mirror descent written as a plain loop over dicts (the module docstring's algorithm)."""
    f = [1.0 / parts] * parts  # report: test oracle
    for step in range(S.STEPS):
        var = [sum((c / f[s]) ** 2 for s, c in m.items()) for m in models]
        logs = [0.5 * math.log(v) - math.log(n) for v, n in zip(var, norms)]
        top = max(logs)
        pis = [math.exp(S.TEMPERATURE * (x - top)) for x in logs]
        total = sum(pis)
        push = [0.0] * parts
        for pi, v, m in zip(pis, var, models):
            for s, c in m.items():
                push[s] += (pi / total) * (c / f[s]) ** 2 / v
        rate = S.RATE / math.sqrt(1 + step / 8)
        f = [x * math.exp(rate * p) for x, p in zip(f, push)]
        z = sum(f)
        f = [x / z for x in f]
    return f


def _random_case(rng: random.Random) -> tuple[int, list[dict[int, float]], list[float]]:
    parts, count = rng.randint(2, 6), rng.randint(1, 6)
    models: list[dict[int, float]] = []
    for _ in range(count):
        models.append({s: rng.choice([1.0, 50.0, 1e-9, rng.uniform(0.1, 100.0)])
                       for s in rng.sample(range(parts), rng.randint(1, min(3, parts)))})
    for s in range(parts):
        if not any(s in m for m in models):
            models[rng.randrange(count)][s] = rng.uniform(0.1, 10.0)
    return parts, models, [S.solo(m) * rng.choice([1.0, 0.5, 2.0]) for m in models]


def test_the_vectorised_split_chooses_the_loops_exact_shares() -> None:
    rng = random.Random(35)
    for _ in range(6):
        parts, models, norms = _random_case(rng)
        ref, got = _loop_reference(parts, models, norms), S.minimax_fractions(parts, models, norms)
        assert max(abs(a - b) for a, b in zip(ref, got)) < 1e-12  # report: float heuristic vs its loop form
        assert S.exact_shares(got) == S.exact_shares(ref)


def test_a_second_plan_of_the_same_release_reuses_the_split() -> None:
    models, norms = [{0: 1.0}, {0: 50.0, 1: 50.0}, {1: 3.0, 2: 4.0}], [1.0, 100.0, 5.0]
    S._minimax.cache_clear()
    first = S.minimax_fractions(3, models, norms)
    first[0] = -1.0  # the caller's list is its own: the memo is not changed through it
    second = S.minimax_fractions(3, [dict(m) for m in models], list(norms))
    assert second[0] > 0 and S._minimax.cache_info().hits == 1 and S._minimax.cache_info().misses == 1


def _no_descent(*args: object) -> None:
    raise AssertionError("the descent ran again instead of reading the stored split")


def test_a_fresh_process_reads_the_split_from_the_disk_memo(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 35 §2: the plan's split is stored on disk (a fresh process pays no descent); other inputs are another key."""
    monkeypatch.setenv("DPSPARK_CACHE_DIR", str(tmp_path))
    models, norms = [{0: 1.0}, {0: 50.0, 1: 50.0}, {1: 3.0, 2: 4.0}], [1.0, 100.0, 5.0]
    S._minimax.cache_clear()
    first = S.split(3, models, norms)
    assert first == S.exact_shares(S.minimax_fractions(3, models, norms)) and sum(first) == 1
    [entry] = list((tmp_path / "calibrations").glob("groups_split-*.json"))
    S._minimax.cache_clear()  # as in a new process: only the disk memo is left
    monkeypatch.setattr(S, "_minimax", _no_descent)
    assert S.split(3, [dict(m) for m in models], list(norms)) == first
    with pytest.raises(AssertionError, match="descent ran again"):  # another norm: another key
        S.split(3, models, [1.0, 100.0, 6.0])
    assert entry.exists()


@pytest.mark.parametrize("value", [[341, 341, 341], [0, 512, 512], [1022, 1, 1, 0], "342", [342.0, 341, 341]])
def test_a_stored_split_that_is_no_split_is_named_and_ignored(tmp_path, monkeypatch, value) -> None:  # type: ignore[no-untyped-def]
    """A resealed entry whose shares do not sum to 1 (or are not positive units) is refused and recomputed."""
    from dpspark import disk_memo as CC

    monkeypatch.setenv("DPSPARK_CACHE_DIR", str(tmp_path))
    models, norms = [{0: 1.0}, {0: 50.0, 1: 50.0}, {1: 3.0, 2: 4.0}], [1.0, 100.0, 5.0]
    good = S.split(3, models, norms)
    [entry] = list((tmp_path / "calibrations").glob("groups_split-*.json"))
    doc = json.loads(entry.read_text())
    doc["value"], doc["check"] = value, CC._check(doc["key"], value)
    entry.write_text(json.dumps(doc))
    with pytest.warns(CC.CorruptCacheEntry, match=str(entry)):
        assert S.split(3, models, norms) == good
    assert json.loads(entry.read_text())["value"] == [g.numerator * (S.SPLIT_DENOMINATOR // g.denominator) for g in good]
