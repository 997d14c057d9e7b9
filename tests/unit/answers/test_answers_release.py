"""``answers`` releases end to end: config -> one pass (Arrow, Spark) -> release -> open_release -> answers."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.api.config import ConfigError, ReleaseSpec
from dpspark.engine.runner import run_release
from dpspark.lookup import open_release
from dpspark.rng import SeededRandom

N = 400
XS = [((i * 37) % 23) / 2 - 3 for i in range(N)]  # in [-3, 8], halves: exact in fixed point
UNITS = [i % 150 for i in range(N)]
GROUPS = ["a" if i % 3 else "b" for i in range(N)]
NO_FILTER = [
    {"name": "rows", "kind": "count"},
    {"name": "total", "kind": "sum", "column": "x", "lo": "-2", "hi": "5"},
    {"name": "avg", "kind": "mean", "column": "x", "lo": "0", "hi": "10", "mean": "noisy_count"},
    {"name": "avg_n", "kind": "mean", "column": "x", "lo": "-1/2", "hi": "6", "n": 1000, "scale_bits": 2},
]
WITH_FILTER = NO_FILTER + [
    {"name": "rows_a", "kind": "count", "filter": "g = 'a'"},
    {"name": "total_b", "kind": "sum", "column": "x", "lo": "0", "hi": "3", "filter": "g = 'b' AND x > 1"},
]


def _data(tmp: Path) -> Path:
    path = tmp / "in.parquet"
    pq.write_table(pa.table({"x": XS, "u": UNITS, "g": GROUPS}), path)
    return path


def _raw(tmp: Path, queries, mechanism="bounded_noise", out="rel", **privacy) -> dict:
    return {"input": {"path": str(_data(tmp))},
            "privacy": {"mechanism": mechanism, "epsilon": "1", "delta": "1e-6", "max_units": 1000, **privacy},
            "queries": queries, "output": {"path": str(tmp / out)}}


def truth(query: dict, units: bool = False) -> tuple[Fraction, ...]:
    """(sum over units of clip(unit total)), and the count, exactly, as the mechanism defines them."""
    S = 1 if query["kind"] == "count" else 1 << query.get("scale_bits", 8)
    lo = Fraction(query.get("lo", 0)) * S
    hi = Fraction(query.get("hi", 1)) * S
    lo, hi = lo.__floor__(), hi.__ceil__()

    def keep(i: int) -> bool:
        f = query.get("filter")
        if f is None:
            return True
        if f == "g = 'a'":
            return GROUPS[i] == "a"
        assert f == "g = 'b' AND x > 1"
        return GROUPS[i] == "b" and XS[i] > 1

    def fixed(x: float) -> int:
        v = Fraction(x) * S  # the data are halves: exact
        r = (abs(v) + Fraction(1, 2)).__floor__()
        return r if v >= 0 else -r

    per: dict[int, list[int]] = {}
    for i, x in enumerate(XS):
        u = UNITS[i] if units else i
        val = 1 if query["kind"] == "count" else fixed(x) if keep(i) else 0
        if query["kind"] == "count" and not keep(i):
            val = 0
        per.setdefault(u, [0, 0])
        per[u][0] += val
        per[u][1] += 1 if keep(i) else 0
    total = sum(min(max(v, lo), hi) for v, _ in per.values())
    count = sum(min(c, 1) for _, c in per.values())
    return Fraction(total), Fraction(count), Fraction(S)


def check_answers(rel, queries, units: bool = False) -> None:
    """Every answer within its stated bound (R with probability 1, or the conditional one)."""
    assert set(rel.answers()) == {q["name"] for q in queries}
    for q in queries:
        row = rel.row(q["name"])
        total, count, S = truth(q, units)
        if q["kind"] == "count":
            assert abs(row["value"] - total) <= row["R"]
        elif q["kind"] == "sum":
            assert abs(row["value"] - total / S) <= row["R"]
        elif q.get("mean", "public_n") == "public_n":
            assert abs(row["value"] - total / (S * q["n"])) <= row["R"]
        else:
            assert row["R"] is None and row["condition"].startswith("conditional")
            if row["value"] is not None and count >= 1:
                assert abs(row["value"] - total / (S * count)) <= row["conditional_bound"]


def test_arrow_release_end_to_end(tmp_path: Path, capsys) -> None:
    from dpspark.cli.app import main as cli
    from dpspark.noise.bounded_calibrate import calibrate
    from dpspark.privacy.measures import ApproxDP

    spec = ReleaseSpec.from_dict(_raw(tmp_path, NO_FILTER))
    out = run_release(spec, rng=SeededRandom(1), progress=lambda _m: None)  # a local file: the Arrow engine
    rel = open_release(out)
    assert type(rel).__name__ == "AnswersLookup" and rel.deterministic
    check_answers(rel, NO_FILTER)
    cal = calibrate(5, "1", "1e-6", sensitivity=1)
    assert rel.statements["add_remove"].measure == ApproxDP(cal.epsilon, cal.certified_delta)
    assert rel.section["k"] == 5 and rel.section["noise"]["M"] == cal.M
    assert rel.parameters["certified_delta"] == str(cal.certified_delta)
    df = rel.to_pandas()
    assert list(df["name"]) == [q["name"] for q in NO_FILTER] and "R" in df.columns
    assert cli(["inspect", str(out)]) == 0
    assert "every answer is within R of its true value" in capsys.readouterr().out


def test_gaussian_release_states_its_conversion(tmp_path: Path) -> None:
    spec = ReleaseSpec.from_dict(_raw(tmp_path, NO_FILTER, mechanism="gaussian"))
    rel = open_release(run_release(spec, rng=SeededRandom(2), progress=lambda _m: None))
    st = rel.statements
    assert st["add_remove_approx_dp"].measure.epsilon.le(1)
    assert st["add_remove_approx_dp"].measure.delta == Fraction(1, 10**6)
    assert not rel.deterministic and rel.bound("total") is None and rel.bound95("total") > 0


def test_arrow_release_with_filters(tmp_path: Path) -> None:
    """Filters run on the Arrow engine too (the predicate grammar compiles to Arrow masks)."""
    for units in (False, True):
        extra = {"unit_column": "u"} if units else {}
        spec = ReleaseSpec.from_dict(_raw(tmp_path, WITH_FILTER, out=f"rel{units}", **extra))
        rel = open_release(run_release(spec, rng=SeededRandom(1), progress=lambda _m: None, engine="arrow"))
        check_answers(rel, WITH_FILTER, units=units)


def test_arrow_filter_totals_are_exact() -> None:
    """The Arrow totals with filters equal the definition computed in Python (no noise)."""
    from dpspark.mechanisms.answers.arrow_kernel import scalar_totals_arrow
    from dpspark.mechanisms.answers.queries import parse_queries, scalars_of

    table = pa.table({"x": XS, "u": UNITS, "g": GROUPS})
    queries = WITH_FILTER[4:]
    got = scalar_totals_arrow(table, scalars_of(parse_queries(queries)), None)
    assert got == [int(truth(q)[0]) for q in queries]
    assert got[0] == GROUPS.count("a")


def test_adaptive_session_declares_k_once(tmp_path: Path) -> None:
    import pandas as pd

    from dpspark.api.session import Session, SessionBudgetExceeded
    from dpspark.api.session_answers import AnswerBudgetExhausted

    df = pd.DataFrame({"x": XS, "u": UNITS, "g": GROUPS})
    with Session(df, max_units=1000, budget={"epsilon": "3/2", "delta": "1e-5"}, rng=SeededRandom(4)) as s:
        a = s.answers(k=4, mechanism="bounded_noise", epsilon="1", delta="1e-6")
        assert a.remaining == 4 and s.remaining.epsilon.le(Fraction(1, 2))  # spent once, up front
        first = s.answer(NO_FILTER[0])
        assert abs(first["value"] - N) <= first["R"]
        nxt = NO_FILTER[1] if first["value"] > 100 else NO_FILTER[3]  # chosen after seeing the answer
        a.answer(nxt)
        a.answer(NO_FILTER[2])  # a noisy-count mean: two slots
        assert a.remaining == 0
        with pytest.raises(AnswerBudgetExhausted, match="only 0 of the declared k = 4"):
            a.answer({"name": "more", "kind": "count"})
        with pytest.raises(SessionBudgetExceeded):
            s.answers(k=1, mechanism="bounded_noise", epsilon="1", delta="1e-6")
    from dpspark.mechanisms.answers.mechanism import BoundedNoiseAnswers

    same = BoundedNoiseAnswers(ReleaseSpec.from_dict(_raw(tmp_path, [{"name": f"q{i}", "kind": "count"}
                                                                      for i in range(4)])))
    assert a.statement.measure == same.statement().measure  # the same k-query calibration as a batch


@pytest.mark.spark
def test_spark_release_with_filters_and_units(spark, tmp_path: Path) -> None:
    from dpspark.mechanisms.answers.arrow_kernel import scalar_totals_arrow
    from dpspark.mechanisms.answers.queries import QueryError, parse_queries, scalars_of
    from dpspark.mechanisms.answers.spark_kernel import scalar_totals

    spec = ReleaseSpec.from_dict(_raw(tmp_path, WITH_FILTER, unit_column="u"))
    rel = open_release(run_release(spec, spark=spark, rng=SeededRandom(3), progress=lambda _m: None))
    check_answers(rel, WITH_FILTER, units=True)
    assert rel.section["k"] == len(WITH_FILTER) + 1

    # the Spark and Arrow passes compute the same exact totals
    df = spark.read.parquet(str(tmp_path / "in.parquet"))
    scalars = scalars_of(parse_queries(NO_FILTER))
    table = pq.read_table(tmp_path / "in.parquet")
    for unit in (None, "u"):
        assert scalar_totals(df, scalars, unit, 1000) == scalar_totals_arrow(table, scalars, unit)

    # a filter on a missing column fails at analysis, before any job and before any noise
    bad = scalars_of(parse_queries([{"name": "c", "kind": "count", "filter": "nope = 1"}]))
    with pytest.raises(QueryError, match="query 'c': filter 'nope = 1' names column 'nope'"):
        scalar_totals(df, bad, None, 1000)
    missing = scalars_of(parse_queries([{"name": "s", "kind": "sum", "column": "nope", "lo": "0", "hi": "1"}]))
    with pytest.raises(Exception, match="no column"):
        scalar_totals(df, missing, None, 1000)


def test_histogram_path_equals_per_row_sums(monkeypatch) -> None:
    """Many row-level sums of one column from its value histogram = the per-row clipped sums, exactly."""
    from dpspark.mechanisms.answers import plan as answers_plan
    from dpspark.mechanisms.answers.arrow_kernel import scalar_totals_arrow
    from dpspark.mechanisms.answers.queries import parse_queries, scalars_of

    xs = [None, -2.5, -0.5, 0.5, 1.5, 2.49, 7.0, 1e30, -1e30, float("nan")] * 7 + [i / 8 for i in range(-40, 40)]
    table = pa.table({"x": pa.array(xs, pa.float64())})
    queries = [{"name": f"s{j}", "kind": "sum", "column": "x", "lo": str(Fraction(-j, 3)), "hi": str(Fraction(j + 1, 4)),
                "scale_bits": 2} for j in range(12)] + [{"name": "c", "kind": "count"}]
    scalars = scalars_of(parse_queries(queries))
    groups, rest = answers_plan.split(scalars, None)
    assert len(groups) == 1 and rest == [12]
    fast = scalar_totals_arrow(table, scalars, None)
    monkeypatch.setattr(answers_plan, "HIST_MIN_MEMBERS", 10**9)
    assert answers_plan.split(scalars, None)[0] == []
    assert scalar_totals_arrow(table, scalars, None) == fast
