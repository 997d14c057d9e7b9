"""Issue 31 §1: a Session caller cannot switch on a check whose outcome is the data (Arrow engine).

``out_of_universe = "error"`` and ``on_excess_units = "refuse"`` answer "does some unit hold a key outside the
list?" and "are there more than max_units units?" exactly. On neighbouring inputs D and D' (one unit more,
holding the key 'hiv' or being unit max_units + 1) an analyst's call must have the same observable outcome:
exception type and text, warnings, stdout/stderr, files, session budget and ledger. The Spark twin is
``tests/system/spark/test_trust_curator_spark.py`` (it reuses :func:`observe` and :data:`CASES`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Callable

import pytest

#: the universe and public key list the analyst chose (nobody in D holds 'hiv'; one unit of D' does)
CITIES = ["north", "south"]
UNIVERSE = {"kind": "categorical", "values": CITIES}


def rows(units: int, extra_city: str | None = None) -> dict[str, list[Any]]:
    """``units`` units with one row each, cities from CITIES; ``extra_city``: one more unit holding it."""
    user = list(range(units))
    city = [CITIES[i % 2] for i in range(units)]
    if extra_city is not None:
        user.append(units)
        city.append(extra_city)
    return {"user": user, "city": city, "x": [i % 7 for i in range(len(user))]}


#: name -> (max_units, D, D'): neighbours under add/remove of one unit
PAIRS: dict[str, tuple[int, dict[str, list[Any]], dict[str, list[Any]]]] = {
    "outside_key": (101, rows(100), rows(100, "hiv")),
    "excess_units": (100, rows(100), rows(100, "north")),
}

Call = Callable[[Any, Path], Any]

#: (pair, the analyst's call): every analyst-reachable route to the two options
CASES: dict[str, tuple[str, Call]] = {
    "histogram_out_of_universe": ("outside_key", lambda s, out: s.histogram(
        keys="city", universe=UNIVERSE, mechanism="dense", epsilon="1", out_of_universe="error", output=out)),
    "histogram_on_excess_units": ("excess_units", lambda s, out: s.histogram(
        keys="city", universe=UNIVERSE, mechanism="dense", epsilon="1", on_excess_units="refuse", output=out)),
    "groups_out_of_universe": ("outside_key", lambda s, out: s.groups(
        by="city", keys=CITIES, aggregates=[{"name": "n", "kind": "count"}], epsilon="1", noise="pure",
        out_of_universe="error", output=out)),
    "release_sections_privacy": ("outside_key", lambda s, out: s.release(
        mechanism="dense", epsilon="1", keys="city", universe=UNIVERSE, output=out,
        sections={"privacy": {"mechanism": "dense", "epsilon": "1", "max_units": 101, "unit_column": "user",
                              "out_of_universe": "error"}})),
    "release_sections_privacy_excess": ("excess_units", lambda s, out: s.release(
        mechanism="dense", epsilon="1", keys="city", universe=UNIVERSE, output=out,
        sections={"privacy": {"mechanism": "dense", "epsilon": "1", "max_units": 100, "unit_column": "user",
                              "on_excess_units": "refuse"}})),
}


def observe(data: Any, max_units: int, call: Call, where: Path, capfd: Any, **session: Any) -> dict[str, Any]:
    """Everything an analyst can see of one call on a fresh Session over ``data``, with a session budget and
    a ledger: the exception (type, text), warnings, captured output, files written and both charges."""
    import dpspark
    from dpspark.ledger import Ledger
    from dpspark.rng import SeededRandom

    where.mkdir()
    ledger = where / "ledger.sqlite"
    Ledger(ledger).set_total("d", "10")
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with dpspark.Session(data, max_units=max_units, unit_column="user", budget={"epsilon": "10"},
                             ledger=ledger, dataset="d", rng=SeededRandom(7), **session) as s:
            try:
                call(s, where / "out")
                outcome: tuple[str, str] | None = None
            except Exception as err:  # noqa: BLE001 - the outcome is what is compared
                outcome = (type(err).__name__, str(err))
            left = s.remaining.measure
    out, err = capfd.readouterr()
    spent = Ledger(ledger).spent("d")
    return {"outcome": outcome, "warnings": [(w.category.__name__, str(w.message)) for w in caught],
            "stdout": out, "stderr": err, "left": left,
            "files": sorted(str(p.relative_to(where)) for p in where.rglob("*") if not p.name.startswith("ledger")),
            "ledger": (spent.epsilon, spent.delta)}


def arrow_table(columns: dict[str, list[Any]]) -> Any:
    import pyarrow as pa

    return pa.table(columns)


@pytest.mark.parametrize("case", sorted(CASES))
def test_neighbours_look_the_same_to_an_analyst(case: str, tmp_path: Path, capfd: Any) -> None:
    """D and D' give the same observable outcome: the call is refused before anything is read or charged."""
    import dpspark

    pair, call = CASES[case]
    n, d, d2 = PAIRS[pair]
    a = observe(arrow_table(d), n, call, tmp_path / "D", capfd)
    b = observe(arrow_table(d2), n, call, tmp_path / "D2", capfd)
    assert a == b
    assert a["outcome"] is not None and a["outcome"][0] == "CuratorOptionError"
    assert "curator_checks=True" in a["outcome"][1] and "nothing was spent" in a["outcome"][1]
    assert a["ledger"] == (0, 0) and a["files"] == [] and a["warnings"] == []
    assert a["left"] == dpspark.Session(arrow_table(d), max_units=n, budget={"epsilon": "10"}).remaining.measure


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_curator_keeps_the_checks_and_is_warned(case: str, tmp_path: Path, capfd: Any) -> None:
    """With ``curator_checks=True`` the check runs (D passes, D' is refused) and the Session warns what it
    discloses; the refusal keeps the spend, as the CLI's does."""
    from dpspark.api.curator import CURATOR_CHECKS_WARNING

    pair, call = CASES[case]
    n, d, d2 = PAIRS[pair]
    a = observe(arrow_table(d), n, call, tmp_path / "D", capfd, curator_checks=True)
    b = observe(arrow_table(d2), n, call, tmp_path / "D2", capfd, curator_checks=True)
    assert a["outcome"] is None and b["outcome"] is not None and b["outcome"][0] == "CuratorError"
    assert ("UserWarning", CURATOR_CHECKS_WARNING) in a["warnings"]
    assert a["ledger"] == b["ledger"] == (1, 0)


def test_curator_checks_must_be_a_bool() -> None:
    import dpspark
    from dpspark.api.session import SessionInputError

    with pytest.raises(SessionInputError, match="curator_checks must be True or False"):
        dpspark.Session(arrow_table(rows(3)), max_units=3, curator_checks="yes")  # type: ignore[arg-type]


def test_every_mechanism_refuses_the_options_from_a_session() -> None:
    """The refusal is on the parsed spec, whatever the mechanism (the samplers and groups read them too)."""
    from dpspark.api.curator import CURATOR_OPTIONS, CuratorOptionError, check_analyst_spec
    from dpspark.mechanisms.registry import names

    class Spec:
        out_of_universe, on_excess_units = "drop", "truncate"

    check_analyst_spec(Spec(), curator_checks=False)  # the defaults pass
    for name, (value, what) in CURATOR_OPTIONS.items():
        spec = Spec()
        setattr(spec, name, value)
        with pytest.raises(CuratorOptionError, match=f"privacy.{name} = '{value}'") as err:
            check_analyst_spec(spec, curator_checks=False)
        assert what in str(err.value)
        check_analyst_spec(spec, curator_checks=True)
    assert "groups" in names() and "bernoulli_sampler" in names()


def test_adaptive_answers_reach_the_same_refusal(tmp_path: Path) -> None:
    """``Session.answers`` builds its spec through ``Session.spec``: the same refusal, before the charge."""
    import dpspark
    from dpspark.api.curator import CuratorOptionError

    with dpspark.Session(arrow_table(rows(10)), max_units=10, unit_column="user", budget={"epsilon": "2",
                         "delta": "1e-6"}) as s:
        with pytest.raises(CuratorOptionError, match="on_excess_units"):
            s.answers(k=2, epsilon="1", delta="1e-7", on_excess_units="refuse")
        assert s.remaining == dpspark.Session(arrow_table(rows(10)), max_units=10, budget={
            "epsilon": "2", "delta": "1e-6"}).remaining


def test_an_analyst_cannot_point_a_release_at_another_input(tmp_path: Path) -> None:
    """``sections={"input": ...}`` would make the plan check another file (and name its columns in the error)
    while the data pass reads the session's data: refused before anything is read or spent."""
    import dpspark
    from dpspark.api.session import SessionInputError

    other = tmp_path / "other.csv"
    other.write_text("secret_column,b\n1,2\n")
    with dpspark.Session(arrow_table(rows(10)), max_units=10, budget={"epsilon": "2"}) as s:
        with pytest.raises(SessionInputError, match=r"sections cannot hold \[input\]") as err:
            s.release(mechanism="dense", epsilon="1", keys="nope", universe=UNIVERSE,
                      sections={"input": {"path": str(other)}})
        assert "secret_column" not in str(err.value)
        assert s.remaining == dpspark.Session(arrow_table(rows(10)), max_units=10, budget={"epsilon": "2"}).remaining
