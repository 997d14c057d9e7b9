"""max_units optional for groups and answers (issue 32 §3), on the Arrow engine with a real Parquet file.

Without ``max_units`` the release runs at the fixed public cap (2^40 units), states add/remove of one unit with
no limit on the number of units (never the cap as if the user chose it), keeps the noisy unit count without a
"MORE than max_units" sentence, and the ledger pins no n. A family calibrated on n is refused before any spend.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpspark.privacy import AddRemove
from dpspark.privacy.relations import UNITS_CAP

PEOPLE = 30_000
REGIONS = ["north", "south", "east", "west"]
COUNT = [{"name": "people", "kind": "count"}]
NO_LIMIT = "no limit on the number of units"


@pytest.fixture(scope="module")
def survey(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PEOPLE people, one row each, regions round robin; ``hours`` = pid mod 50."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    pid = np.arange(PEOPLE, dtype=np.int64)
    path = tmp_path_factory.mktemp("units_optional") / "survey.parquet"
    pq.write_table(pa.table({"pid": pid, "region": pa.array([REGIONS[i % 4] for i in range(PEOPLE)]),
                             "hours": pid % 50}), path)
    return path


def _session(data: Any, **kw: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(data, unit_column="pid", rng=SeededRandom(7), **kw)


def test_groups_without_max_units_states_no_limit(survey: Path, tmp_path: Path) -> None:
    from dpspark.cli import main
    from dpspark.ledger import Ledger

    led = tmp_path / "ledger.db"
    with _session(survey, budget={"epsilon": "2"}, ledger=led, dataset="survey", total={"epsilon": "5"}) as s:
        g = s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=tmp_path / "rel")
        assert s.remaining.epsilon.le(Fraction(1))
    st = g.manifest.add_remove
    assert st.relation == AddRemove(UNITS_CAP) and NO_LIMIT in st.relation.text()
    assert g.manifest.max_units == UNITS_CAP and g.section["units"]["max_units"] == UNITS_CAP
    words = g.units_words()
    assert "no max_units declared" in words and "MORE" not in words and str(UNITS_CAP) not in words
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = g.to_pandas()  # no "dropped" warning
    assert frame.attrs["units"] == words
    for key, value, err in zip(frame["region"], frame["people"], frame["people_error"]):
        assert abs(value - PEOPLE // 4) <= err, key  # the count's bar at the cap (w.p. >= 0.95 each, seeded)
    assert Ledger(led).pinned_max_units("survey") is None and len(Ledger(led).releases("survey")) == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["inspect", str(tmp_path / "rel")]) == 0
    text = out.getvalue()
    assert NO_LIMIT in text and "units at most (declared" not in text and "MORE than max_units" not in text
    with _session(survey, max_units=100_000, ledger=led, dataset="survey") as s:  # a declared n pins n later
        s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=tmp_path / "rel2")
    assert Ledger(led).pinned_max_units("survey") == 100_000
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert main(["verify", str(tmp_path / "rel"), "--ledger", str(led)]) == 0, out.getvalue()
    assert "pinned n" not in out.getvalue()  # the cap release composes with the n pinned after it


def test_groups_explain_and_dry_run_say_no_limit(survey: Path, tmp_path: Path) -> None:
    from dpspark.cli import main

    with _session(survey) as s:
        text = s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", explain=True)
    assert NO_LIMIT in text and "keep max_units units" not in text
    cfg = tmp_path / "g.toml"
    cfg.write_text(f'[input]\npath = "{survey}"\n[privacy]\nmechanism = "groups"\nepsilon = "1"\n'
                   f'[groups]\nby = ["region"]\nkeys = {REGIONS!r}\n'.replace("'", '"')
                   + '[[aggregates]]\nname = "n"\nkind = "count"\n'
                   + f'[output]\npath = "{tmp_path / "out"}"\n')
    err = io.StringIO()
    with contextlib.redirect_stdout(err):
        assert main(["release", "--config", str(cfg), "--dry-run"]) == 0
    plan = err.getvalue()
    assert f"privacy unit     row ({NO_LIMIT}" in plan and "none removed below the fixed cap" in plan
    assert f"max_units: {NO_LIMIT}" in plan and not (tmp_path / "out").exists()


def test_answers_without_max_units(survey: Path, tmp_path: Path) -> None:
    """bounded_noise: every answer within R of the truth, always; the statement says no limit."""
    from dpspark.ledger import Ledger

    led = tmp_path / "ledger.db"
    with _session(survey, ledger=led, dataset="survey", total={"epsilon": "5", "delta": "1e-6"}) as s:
        answers = s.answers(k=2, mechanism="bounded_noise", epsilon="1", delta="1e-8")
        n = answers.answer({"name": "n", "kind": "count"})
        h = answers.answer({"name": "h", "kind": "sum", "column": "hours", "lo": "0", "hi": "49"})
    assert abs(n["value"] - PEOPLE) <= Fraction(n["R"])
    assert abs(h["value"] - sum(i % 50 for i in range(PEOPLE))) <= Fraction(h["R"])
    assert Ledger(led).pinned_max_units("survey") is None
    with _session(survey) as s:
        rel = s.release(mechanism="gaussian", epsilon="1", delta="1e-8", output=tmp_path / "g",
                        sections={"queries": [{"name": "n", "kind": "count"}]})
    assert rel.manifest.add_remove.relation == AddRemove(UNITS_CAP) and NO_LIMIT in rel.privacy
    assert rel.manifest.parameters["window_radius"] == UNITS_CAP  # the noise window: the cap, < 2^48


def test_a_family_that_needs_n_is_refused_before_any_spend(survey: Path, tmp_path: Path) -> None:
    from dpspark.api.session import SessionInputError
    from dpspark.cli import main
    from dpspark.ledger import Ledger

    led = tmp_path / "ledger.db"
    with _session(survey, budget={"epsilon": "2"}, ledger=led, dataset="survey", total={"epsilon": "5"}) as s:
        with pytest.raises(SessionInputError, match="'dense' needs max_units") as err:
            s.histogram(keys="region", universe={"kind": "categorical", "values": REGIONS}, mechanism="dense",
                        epsilon="1", output=tmp_path / "h")
        assert "calibrated on n" in str(err.value) and "nothing was spent" in str(err.value)
        assert s.budget.spent is None  # the session budget: nothing charged
    assert Ledger(led).releases("survey") == [] and not (tmp_path / "h").exists()
    cfg = tmp_path / "h.toml"  # the CLI: the config's parse refuses it, before the ledger is touched
    cfg.write_text(f'[input]\npath = "{survey}"\n[keys]\ncolumns = ["region"]\n[universe]\nkind = "categorical"\n'
                   f'values = ["north", "south"]\n[privacy]\nmechanism = "dense"\nepsilon = "1"\n'
                   f'[output]\npath = "{tmp_path / "h2"}"\n[budget]\nledger = "{led}"\ndataset = "survey"\n')
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        assert main(["release", "--config", str(cfg)]) != 0
    assert "missing 'max_units'" in errors.getvalue() and "'dense' needs it" in errors.getvalue()
    assert Ledger(led).releases("survey") == [] and not (tmp_path / "h2").exists()


def test_sql_without_max_units(survey: Path, tmp_path: Path) -> None:
    """Session.sql and ``dpspark sql`` (no --max-units): the groups call the query compiles to, at the cap."""
    import dpspark
    from dpspark.cli import main
    from dpspark.rng import SeededRandom

    query = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = pid) "
             "region, COUNT(*) AS n FROM survey GROUP BY region")
    with dpspark.Session(tables={"survey": str(survey)}, unit_column="pid", rng=SeededRandom(3)) as s:
        rel = s.sql(query, output=tmp_path / "s")
    assert rel.manifest.add_remove.relation == AddRemove(UNITS_CAP) and "no max_units declared" in rel.units_words()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["sql", query, "--table", f"survey={survey}", "--explain"]) == 0
    assert NO_LIMIT in out.getvalue() and "nothing was spent" in out.getvalue()


def test_a_declared_max_units_keeps_its_words(survey: Path, tmp_path: Path) -> None:
    """With a user n the statement and the unit words are as before (n quoted, the MORE sentence possible)."""
    with _session(survey, max_units=20_000) as s:
        g = s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=tmp_path / "rel")
    assert g.manifest.add_remove.relation == AddRemove(20_000)
    assert "at most n = 20000 units" in g.manifest.add_remove.relation.text()
    assert "MORE than max_units = 20000" in g.units_words()
