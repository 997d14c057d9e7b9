"""Issue 20 §1 and §5: a failed data pass reveals no data, and its budget or slot is charged first.

Probes as an attacker would: a CSV whose rows do not parse (the parser's own message quotes the row), on
the Arrow engine and on Spark (FAILFAST CSV reading, which names the malformed record), through the CLI,
the spark-submit entry point, ``Session.release``/``histogram`` and adaptive ``Session.answers``. Each
probe asserts that the secret appears nowhere - the exception's text, cause, context, notes, traceback
frames, the captured stdout/stderr - and that the ledger, the session budget or the answer slot was charged.
"""

from __future__ import annotations

import traceback
import warnings
from pathlib import Path
from typing import Any

import pytest

from dpspark.cli.app import main
from dpspark.engine.data_pass import DATA_PASS_FAILED, DataPassError, run_data_pass
from dpspark.engine.backend import CuratorError
from dpspark.ledger import Ledger

SECRET = "SECRETu3isrich"


def _csv(tmp_path: Path, rows: int = 200, bad_at: int = 100) -> Path:
    """A CSV of (user, city, salary) whose row ``bad_at`` has one field too many and holds SECRET.

    At the default the bad row is in the first block (the one a reader parses to find the types); with
    ``rows = 150_000, bad_at = 149_000`` it lies past the first 1 MiB, where only the full scan meets it.
    """
    lines = ["user,city,salary"]
    for i in range(rows):
        lines.append(f"u{i},c{i % 5},{i}")
    lines[bad_at] = f"u3,{SECRET},50,{SECRET}"  # malformed: 4 fields
    path = tmp_path / "people.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _chain_text(err: BaseException) -> str:
    """Everything an exception carries that a caller could print or inspect."""
    parts = [str(err), repr(err), *getattr(err, "__notes__", ())]
    parts += traceback.format_exception(err)
    tb = err.__traceback__
    while tb is not None:  # the frames' locals, as a debugger or a rich traceback shows them
        parts += [repr(v)[:10_000] for v in tb.tb_frame.f_locals.values()]
        tb = tb.tb_next
    return "\n".join(parts)


def assert_value_free(err: BaseException) -> None:
    """The fixed error: no chain, no secret anywhere it could be read."""
    assert isinstance(err, DataPassError), type(err)
    assert str(err) == DATA_PASS_FAILED
    assert err.__cause__ is None and err.__context__ is None
    assert SECRET not in _chain_text(err)


# ---------------------------------------------------------------------------------------------- unit
def _leaky() -> None:
    raise ValueError(f"Failed to parse string: '{SECRET}'")


def test_run_data_pass_withholds_everything() -> None:
    with pytest.raises(DataPassError) as info:
        run_data_pass(_leaky)
    assert_value_free(info.value)
    assert not getattr(info.value, "__notes__", None)


def test_a_naive_from_none_keeps_the_original_in_context() -> None:
    """The mutant the issue names: ``raise ... from None`` inside the except block fails the same check."""
    def naive() -> None:
        try:
            _leaky()
        except Exception:
            raise DataPassError(DATA_PASS_FAILED) from None

    with pytest.raises(DataPassError) as info:
        naive()
    assert info.value.__context__ is not None and SECRET in str(info.value.__context__)
    with pytest.raises(AssertionError):
        assert_value_free(info.value)


def test_value_free_curator_errors_pass_fresh() -> None:
    def refuse() -> None:
        secret_local = SECRET  # noqa: F841 - a data value in the failing frame
        raise CuratorError("the input holds more units than privacy.max_units = 10")

    with pytest.raises(CuratorError) as info:
        run_data_pass(refuse)
    assert "max_units = 10" in str(info.value)
    assert info.value.__context__ is None and SECRET not in _chain_text(info.value)


def test_show_data_errors_is_an_opt_in_with_a_warning() -> None:
    with warnings.catch_warnings(record=True) as seen, pytest.raises(DataPassError) as info:
        warnings.simplefilter("always")
        run_data_pass(_leaky, show_data_errors=True)
    assert SECRET in str(info.value.__cause__)
    assert any("can quote values of individual rows" in str(w.message) for w in seen)


# ---------------------------------------------------------------------------------------------- Arrow
#: every probe's config ends so: a ledger with room for the probes, and the output path
BUDGET_AND_OUTPUT = """[budget]
ledger = "{ledger}"
dataset = "people"
total_epsilon = "10"
total_delta = "1e-3"
[output]
path = "{out}"
"""

HIST = """
[input]
path = "{path}"
[keys]
columns = ["city"]
[universe]
kind = "string"
max_bytes = 15
[privacy]
mechanism = "stability"
epsilon = "1"
delta = "1e-6"
max_units = 1000
""" + BUDGET_AND_OUTPUT

ANSWERS = """
[input]
path = "{path}"
[privacy]
mechanism = "bounded_noise"
epsilon = "1"
delta = "1e-6"
max_units = 1000
[[queries]]
name = "n"
kind = "count"
""" + BUDGET_AND_OUTPUT


def _ledger_statuses(ledger: Path) -> list[str]:
    return [r.status for r in Ledger(ledger).releases("people")]


@pytest.mark.parametrize("template", [HIST, ANSWERS], ids=["stability", "answers"])
@pytest.mark.parametrize("where", ["first block", "deep"])
def test_cli_release_on_arrow_fails_value_free_and_charged(tmp_path: Path, template: str, where: str,
                                                          capfd: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger.sqlite"
    cfg = tmp_path / "c.toml"
    data = _csv(tmp_path) if where == "first block" else _csv(tmp_path, 150_000, 149_000)
    cfg.write_text(template.format(path=data, ledger=ledger, out=tmp_path / "rel"))
    assert main(["release", "--config", str(cfg), "--engine", "arrow"]) == 2
    out, err = capfd.readouterr()
    assert DATA_PASS_FAILED in err and SECRET not in out + err
    assert _ledger_statuses(ledger) == ["failed"]  # charged before the read, kept after the failure
    assert not (tmp_path / "rel").exists()


def test_cli_show_data_errors_shows_the_original(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger.sqlite"
    cfg = tmp_path / "c.toml"
    cfg.write_text(ANSWERS.format(path=_csv(tmp_path, 150_000, 149_000), ledger=ledger, out=tmp_path / "rel"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["release", "--config", str(cfg), "--engine", "arrow", "--show-data-errors"]) == 2
    _, err = capfd.readouterr()
    assert SECRET in err and "--show-data-errors" in err


def test_session_release_and_histogram_on_arrow(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import dpspark

    with dpspark.Session(str(_csv(tmp_path)), max_units=1000, budget={"epsilon": "3", "delta": "1e-5"}) as s:
        with pytest.raises(DataPassError) as info:
            s.histogram(keys="city", universe={"kind": "string", "max_bytes": 15}, mechanism="stability",
                        epsilon="1", delta="1e-6", output=tmp_path / "h")
        assert_value_free(info.value)
        with pytest.raises(DataPassError) as info:
            s.release(mechanism="bounded_noise", epsilon="1", delta="1e-6", output=tmp_path / "a",
                      sections={"queries": [{"name": "n", "kind": "count"}]})
        assert_value_free(info.value)
        assert len(s.budget.history) == 2  # both charged before the read
    out, err = capfd.readouterr()
    assert SECRET not in out + err


def test_session_answers_charges_the_slot_first(tmp_path: Path) -> None:
    import dpspark

    with dpspark.Session(str(_csv(tmp_path)), max_units=1000, budget={"epsilon": "1", "delta": "1e-6"}) as s:
        a = s.answers(k=3, epsilon="1", delta="1e-6")
        for probe in range(3):  # a failing probe is never free: each uses its slot
            with pytest.raises(DataPassError) as info:
                a.answer({"name": f"probe{probe}", "kind": "count"})
            assert_value_free(info.value)
            assert a.remaining == 2 - probe
        with pytest.raises(dpspark.DPSparkError, match="needs 1 scalar answer"):
            a.answer({"name": "more", "kind": "count"})


def test_session_answers_name_stays_used(tmp_path: Path) -> None:
    import dpspark

    with dpspark.Session(str(_csv(tmp_path)), max_units=1000) as s:
        a = s.answers(k=3, epsilon="1", delta="1e-6")
        with pytest.raises(DataPassError):
            a.answer({"name": "probe", "kind": "count"})
        with pytest.raises(dpspark.DPSparkError, match="already answered"):
            a.answer({"name": "probe", "kind": "count"})
        assert a.remaining == 2


def test_session_answers_k_is_bounded_before_allocation(tmp_path: Path) -> None:
    import dpspark
    from dpspark.api.session_answers import MAX_ANSWERS

    with dpspark.Session(str(_csv(tmp_path)), max_units=1000, budget={"epsilon": "1", "delta": "1e-6"}) as s:
        with pytest.raises(dpspark.DPSparkError, match=str(MAX_ANSWERS)):
            s.answers(k=10**9, epsilon="1", delta="1e-6")
        assert s.budget.spent is None


def test_session_and_ledger_charges_agree(tmp_path: Path) -> None:
    """A ledger that refuses leaves the session budget untouched (and the reverse)."""
    import dpspark

    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("people", "1/2", "1e-5")
    with dpspark.Session(str(_csv(tmp_path)), max_units=1000, budget={"epsilon": "3", "delta": "1e-5"},
                         ledger=ledger, dataset="people") as s:
        with pytest.raises(dpspark.DPSparkError):
            s.answers(k=3, epsilon="1", delta="1e-6")
        assert s.budget.spent is None
        with pytest.raises(dpspark.DPSparkError):
            s.release(mechanism="bounded_noise", epsilon="1", delta="1e-6", output=tmp_path / "a",
                      sections={"queries": [{"name": "n", "kind": "count"}]})
        assert s.budget.spent is None
    assert _ledger_statuses(ledger) == []


def test_pandas_that_arrow_cannot_hold_is_refused_without_values() -> None:
    import pandas as pd

    import dpspark

    df = pd.DataFrame({"salary": [1, SECRET, 3.5]})
    with pytest.raises(dpspark.DPSparkError) as info:
        dpspark.Session(df, max_units=10)
    # the frames hold the curator's own DataFrame here; what an error shows must not
    shown = "\n".join([str(info.value), *traceback.format_exception(info.value)])
    assert SECRET not in shown and info.value.__context__ is None and info.value.__cause__ is None


# ---------------------------------------------------------------------------------------------- Spark
def _typed_csv(tmp_path: Path) -> Path:
    """(user, city, salary) with a salary that is not a number, on a row that holds SECRET."""
    lines = ["user,city,salary"] + [f"u{i},c{i % 5},{i}" for i in range(200)]
    lines[100] = f"u3,{SECRET},notanumber{SECRET}"
    path = tmp_path / "typed.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


SUM_PROBE = """
[input]
path = "{path}"
format = "csv"
[privacy]
mechanism = "bounded_noise"
epsilon = "1"
delta = "1e-6"
max_units = 1000
[[queries]]
name = "total"
kind = "sum"
column = "salary"
lo = "0"
hi = "100"
""" + BUDGET_AND_OUTPUT


@pytest.mark.spark
@pytest.mark.parametrize("ansi", ["true", "false"])
def test_spark_submit_entry_point_probe(spark: Any, tmp_path: Path, ansi: str,
                                        capfd: pytest.CaptureFixture[str]) -> None:
    """jobs/release.py on the active session (as spark-submit runs it): a sum over a column holding text.

    Either the pass reads the text as NULL (the one numeric rule) and releases, or it fails with the fixed
    error; in both cases the ledger was charged and the secret is nowhere in dpspark's output.
    """
    import importlib.util

    spec = importlib.util.spec_from_file_location("release_job", Path(__file__).resolve().parents[3] / "jobs" / "release.py")
    job = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(job)  # type: ignore[union-attr]
    ledger = tmp_path / "ledger.sqlite"
    cfg = tmp_path / "c.toml"
    cfg.write_text(SUM_PROBE.format(path=_typed_csv(tmp_path), ledger=ledger, out=tmp_path / "rel"))
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        code = job.main(["--config", str(cfg)])
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)
    out, err = capfd.readouterr()
    dpspark_lines = "\n".join(line for line in (out + err).splitlines() if line.startswith(("[dpspark", "dpspark", "/")))
    assert SECRET not in dpspark_lines
    if code == 2:
        assert DATA_PASS_FAILED in err and _ledger_statuses(ledger) == ["failed"]
    else:
        assert code == 0 and _ledger_statuses(ledger) == ["released"]
        assert SECRET not in "".join(p.read_text(errors="replace") for p in (tmp_path / "rel").rglob("*.json"))


@pytest.mark.spark
def test_session_on_a_spark_dataframe(spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A FAILFAST reader with a declared schema fails on the row whose salary is text, naming the row."""
    import dpspark

    df = (spark.read.option("header", "true").option("mode", "FAILFAST")
          .schema("user string, city string, salary int").csv(str(_typed_csv(tmp_path))))
    with dpspark.Session(df, max_units=1000, budget={"epsilon": "2", "delta": "1e-5"}) as s:
        a = s.answers(k=2, epsilon="1", delta="1e-6")
        with pytest.raises(DataPassError) as info:
            a.answer({"name": "probe", "kind": "sum", "column": "salary", "lo": "0", "hi": "100"})
        assert_value_free(info.value)
        assert a.remaining == 1
        with pytest.raises(DataPassError) as info:  # Spark parses only the columns read: key on salary
            s.histogram(keys="salary", universe={"kind": "int_range", "lo": 0, "hi": 255}, mechanism="stability",
                        epsilon="1", delta="1e-6", output=tmp_path / "h")
        assert_value_free(info.value)
        assert len(s.budget.history) == 2
    out, err = capfd.readouterr()
    assert SECRET not in out + err  # the JVM's log too: task failures are not logged with their records


# ---------------------------------------------------------------------------------------------- filters
HOSTILE_FILTERS = [
    "CASE WHEN user = 'u3' AND salary > 50 THEN raise_error('u3 is rich') ELSE true END",
    "raise_error('x') IS NULL",
    "salary / 0 > 1",
    "cast(salary AS int) > 1",
    "salary * 9223372036854775807 > 1",
    "assert_true(user = 'u3')",
    "user = 'u3' OR reflect('java.lang.System', 'exit', 0) IS NULL",
]


@pytest.mark.parametrize("engine", ["arrow", pytest.param("spark", marks=pytest.mark.spark)])
def test_adaptive_filters_outside_the_grammar_are_refused_before_any_slot(engine: str, tmp_path: Path,
                                                                          request: pytest.FixtureRequest) -> None:
    import dpspark

    spark = request.getfixturevalue("spark") if engine == "spark" else None
    with dpspark.Session(str(_typed_csv(tmp_path)), max_units=1000, spark=spark) as s:
        a = s.answers(k=2, epsilon="1", delta="1e-6")
        for text in HOSTILE_FILTERS:
            with pytest.raises(dpspark.DPSparkError) as info:
                a.answer({"name": "probe", "kind": "count", "filter": text})
            assert not isinstance(info.value, DataPassError)  # refused on its text, before the data
            assert a.remaining == 2
        # a filter in the grammar runs, on either engine, and charges its slot
        out = a.answer({"name": "rich", "kind": "count", "filter": "user = 'u3' AND city IS NOT NULL"})
        assert a.remaining == 1 and "value" in out


@pytest.mark.spark
def test_engines_agree_on_a_filtered_sum_over_text(spark: Any, tmp_path: Path) -> None:
    """The probe's column holds text: both engines read it as NULL, the same way, and answer."""
    import dpspark
    path = str(_typed_csv(tmp_path))
    query = {"name": "s", "kind": "sum", "column": "salary", "lo": "0", "hi": "100",
             "filter": "user IN ('u3', 'u4', 'u150')"}
    totals = []
    for on_spark in (None, spark):
        with dpspark.Session(path, max_units=1000, spark=on_spark) as s:
            a = s.answers(k=1, epsilon="1", delta="1e-6")
            q = a.mechanism  # the exact totals, before noise: identical across engines
            from dpspark.mechanisms.answers.queries import parse_query

            pq_ = parse_query(query, 0)
            totals.append(q.totals(a._context(pq_)(), pq_.scalars()))
    assert totals[0] == totals[1] == [(3 + 4 + 100) * 256]  # u3's second row (text salary) is NULL: dropped; u150 clips to 100
