"""DP SQL on the Arrow engine: each docs/sql.md example equals its ``Session.groups`` (or answers) call under
one seed, as ``Session.sql``, as the ``[sql]`` TOML form and as ``dpspark sql``; unsupported constructs are
refused before the spend with the ledger unchanged."""

from __future__ import annotations

import hashlib
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

SEED = 17
DOCS = Path(__file__).resolve().parents[3] / "docs" / "sql.md"
WHERE = "age BETWEEN 18 AND 65 AND region != 'south'"
PRIVATE_KEYS = """SELECT WITH DIFFERENTIAL_PRIVACY
    OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = user_id, max_groups_contributed = 2)
  region,
  COUNT(*) AS people,
  AVG(hours, contribution_bounds_per_group => (0, 80)) AS mean_hours,
  SUM(income, contribution_bounds_per_group => (0, 400)) AS income,
  VAR_POP(hours, contribution_bounds_per_group => (0, 80)) AS var_hours,
  PERCENTILE_CONT(age, 0.5, contribution_bounds_per_group => (0, 120)) AS median_age
FROM measurements
WHERE age BETWEEN 18 AND 65 AND region != 'south'
GROUP BY region"""
PUBLIC_KEYS = """SELECT WITH DIFFERENTIAL_PRIVACY
    OPTIONS (epsilon = 1, privacy_unit_column = user_id, max_rows_per_group = 3, keys = regions, noise = 'pure')
  region,
  COUNT(*) AS visits,
  SUM(hours, contribution_bounds_per_group => (0, 80)) AS hours
FROM measurements
GROUP BY region"""
JOINED = """SELECT WITH DIFFERENTIAL_PRIVACY
    OPTIONS (epsilon = 2, delta = 1e-9, privacy_unit_column = user_id, max_groups_contributed = 2)
  zone,
  COUNT(*) AS people,
  AVG(income, contribution_bounds_per_group => (0, 400)) AS mean_income
FROM measurements m
LEFT JOIN zones z ON m.region = z.region
WHERE z.zone != 'polar'
GROUP BY zone"""
STDDEV = """SELECT WITH DIFFERENTIAL_PRIVACY
    OPTIONS (epsilon = 1, privacy_unit_column = user_id, keys = regions, bounds_share = 0.2)
  region,
  STDDEV_POP(hours) AS sd_hours,
  AVG(income) AS mean_income
FROM measurements
GROUP BY region"""
GLOBAL = """SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = user_id)
  COUNT(*) AS users,
  SUM(income, contribution_bounds_per_group => (0, 400)) AS income
FROM measurements
WHERE hours > 40"""


def _api_private(s: Any, out: Path) -> Any:
    return s.groups(by=["region"], universe={"kind": "string", "max_bytes": 31, "column": "region"},
                    epsilon="1", delta="1e-9", max_groups_per_unit=2, where=WHERE, output=out,
                    aggregates=[{"name": "people", "kind": "count"},
                                {"name": "mean_hours", "kind": "mean", "column": "hours", "lo": "0", "hi": "80"},
                                {"name": "income", "kind": "sum", "column": "income", "lo": "0", "hi": "400"},
                                {"name": "var_hours", "kind": "variance", "column": "hours", "lo": "0", "hi": "80"},
                                {"name": "median_age", "kind": "quantile", "column": "age", "q": "0.5", "lo": "0",
                                 "hi": "120"}])


def _api_public(s: Any, out: Path) -> Any:
    return s.groups(by=["region"], keys=["north", "east", "islands"], epsilon="1", max_rows_per_group=3,
                    noise="pure", output=out,
                    aggregates=[{"name": "visits", "kind": "count"},
                                {"name": "hours", "kind": "sum", "column": "hours", "lo": "0", "hi": "80"}])


def _api_joined(s: Any, out: Path) -> Any:
    return s.groups(by=["zone"], universe={"kind": "string", "max_bytes": 31, "column": "zone"}, epsilon="2",
                    delta="1e-9", max_groups_per_unit=2, where="zone != 'polar'", output=out,
                    join={"table": zones_table(), "on": ["region"], "how": "left"},
                    aggregates=[{"name": "people", "kind": "count"},
                                {"name": "mean_income", "kind": "mean", "column": "income", "lo": "0", "hi": "400"}])


def _api_stddev(s: Any, out: Path) -> Any:
    return s.groups(by=["region"], keys=["north", "east", "islands"], epsilon="1", bounds_share="0.2", output=out,
                    aggregates=[{"name": "sd_hours", "kind": "variance", "column": "hours", "post": "sqrt"},
                                {"name": "mean_income", "kind": "mean", "column": "income"}])


def _api_global(s: Any, out: Path) -> Any:
    return s.release(mechanism="bounded_noise", epsilon="1", delta="1e-9", output=out, sections={"queries": [
        {"name": "users", "kind": "count", "hi": 1, "filter": "hours > 40"},
        {"name": "income", "kind": "sum", "column": "income", "lo": "0", "hi": "400", "filter": "hours > 40"}]})


EXAMPLES = {"private": (PRIVATE_KEYS, _api_private), "public": (PUBLIC_KEYS, _api_public),
            "joined": (JOINED, _api_joined), "stddev": (STDDEV, _api_stddev), "global": (GLOBAL, _api_global)}


def measurements(rows: int = 6000, users: int = 1500) -> Any:
    """scripts/gen_measurements.py's columns, small (synthetic input: numpy's seeded Generator is fine)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(3)
    return pa.table({"user_id": rng.integers(0, users, rows), "age": rng.integers(16, 90, rows),
                     "income": rng.gamma(2.0, 30.0, rows).round(2), "hours": rng.normal(38, 9, rows).round(1),
                     "region": rng.choice(["north", "south", "east", "west"], rows)})


def regions_table() -> Any:
    import pyarrow as pa

    return pa.table({"region": ["north", "east", "north", "islands"], "name": ["N", "E", "N2", "I"]})


def zones_table() -> Any:
    """A public dimension table: one row per region (unique join keys)."""
    import pyarrow as pa

    return pa.table({"region": ["north", "south", "east", "west", "polar"],
                     "zone": ["cold", "warm", "warm", "mild", "polar"]})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("sql")
    pq.write_table(measurements(), tmp / "measurements.parquet")
    pq.write_table(regions_table(), tmp / "regions.parquet")
    pq.write_table(zones_table(), tmp / "zones.parquet")
    return {"measurements": tmp / "measurements.parquet", "regions": tmp / "regions.parquet",
            "zones": tmp / "zones.parquet"}


def data_files(rel: Path) -> dict[str, str]:
    """sha256 of every release file but the manifest (it names the time, the engine and the config)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rel.iterdir())
            if p.is_file() and "manifest" not in p.name}


def session(data: Any, **kw: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(tables={"measurements": data, "regions": regions_table(), "zones": zones_table()},
                           public_tables=["regions", "zones"], max_units=100_000, unit_column="user_id",
                           rng=SeededRandom(SEED), **kw)


def test_docs_examples_are_the_tested_ones() -> None:
    # the top-level examples (a fence at the start of a line); an indented one inside a list item is tested where
    # the list item points (the private join without GROUP BY: tests/unit/sql/test_join_global.py)
    blocks = re.findall(r"^```sql\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S | re.M)
    assert [b.strip() for b in blocks] == [q.strip() for q, _ in EXAMPLES.values()]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_sql_equals_the_api_call_under_one_seed(files: dict[str, Path], tmp_path: Path, name: str) -> None:
    query, api = EXAMPLES[name]
    with session(files["measurements"]) as s:
        by_sql = s.sql(query, output=tmp_path / "sql")
    with session(files["measurements"]) as s:
        by_api = api(s, tmp_path / "api")
    assert data_files(tmp_path / "sql") == data_files(tmp_path / "api")
    assert by_sql.to_pandas().equals(by_api.to_pandas()) and len(by_sql.to_pandas()) >= 2
    if name != "global":
        table = by_sql.to_pandas()
        assert {a for a in ("people", "visits", "sd_hours") if a in table} and any(c.endswith("_error") for c in table)
    if name == "public":  # the distinct regions of the public table, in first-seen order
        assert by_sql.keys() == ["north", "east", "islands"]
    if name == "joined":  # every region has a zone: the three zones are selected (2,000+ rows each)
        assert sorted(by_sql.keys()) == ["cold", "mild", "warm"]
    if name == "stddev":  # the file states the standard deviation and the bounds' share; readers show the root
        table = by_sql.to_pandas()
        assert by_sql.chosen_bounds()["share"] == Fraction(1, 5)
        assert [a.get("post") for a in by_sql.aggregates] == ["sqrt", None]
        shown = table.loc[table["region"] == "north"].iloc[0]
        assert 4 < shown["sd_hours"] < 15 and shown["sd_hours_lo"] <= shown["sd_hours"] <= shown["sd_hours_hi"]
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(tables={"measurements": files["measurements"], "regions": regions_table(),
                                 "zones": zones_table()}, public_tables=["regions", "zones"], max_units=100_000,
                         unit_column="user_id", rng=SeededRandom(SEED + 1)) as s:
        s.sql(query, output=tmp_path / "other")
    assert data_files(tmp_path / "other") != data_files(tmp_path / "sql")  # the comparison has teeth


def test_sql_on_pandas_and_a_path_give_the_same_release(files: dict[str, Path], tmp_path: Path) -> None:
    with session(measurements().to_pandas()) as s:
        a = s.sql(PRIVATE_KEYS, output=tmp_path / "a")
    with session(files["measurements"]) as s:
        b = s.sql(PRIVATE_KEYS, output=tmp_path / "b")
    assert a.to_arrow().equals(b.to_arrow()) and len(a.keys()) == 3  # south is filtered out


def test_toml_and_cli_equal_session_sql(files: dict[str, Path], tmp_path: Path, monkeypatch: Any) -> None:
    from dpspark.api.config import load_config
    from dpspark.cli.app import main
    from dpspark.engine.runner import plan_release, run_release
    from dpspark.rng import SeededRandom

    with session(files["measurements"]) as s:
        s.sql(PUBLIC_KEYS, output=tmp_path / "sql")
    toml = tmp_path / "q.toml"
    toml.write_text(f'[sql]\nquery = """{PUBLIC_KEYS}"""\nmax_units = 100000\n'
                    f'[tables.measurements]\npath = "{files["measurements"]}"\n'
                    f'[tables.regions]\npath = "{files["regions"]}"\npublic = true\n'
                    f'[output]\npath = "toml"\n', encoding="utf-8")
    plan = plan_release(load_config(toml), engine="arrow")
    run_release(plan, rng=SeededRandom(SEED))
    assert data_files(tmp_path / "toml") == data_files(tmp_path / "sql")
    assert main(["sql", PUBLIC_KEYS, "--table", f"measurements={files['measurements']}", "--public",
                 f"regions={files['regions']}", "--max-units", "100000", "--output", str(tmp_path / "cli")]) == 0
    from dpspark.lookup import open_release

    assert open_release(tmp_path / "cli").keys() == ["north", "east", "islands"]  # os.urandom noise: keys only


def test_toml_join_equals_session_sql(files: dict[str, Path], tmp_path: Path) -> None:
    from dpspark.api.config import load_config
    from dpspark.engine.runner import plan_release, run_release
    from dpspark.rng import SeededRandom

    with session(files["measurements"]) as s:
        s.sql(JOINED, output=tmp_path / "sql")
    toml = tmp_path / "j.toml"
    toml.write_text(f'[sql]\nquery = """{JOINED}"""\nmax_units = 100000\n'
                    f'[tables.measurements]\npath = "{files["measurements"]}"\n'
                    f'[tables.zones]\npath = "{files["zones"]}"\npublic = true\n'
                    f'[output]\npath = "toml"\n', encoding="utf-8")
    run_release(plan_release(load_config(toml), engine="arrow"), rng=SeededRandom(SEED))
    assert data_files(tmp_path / "toml") == data_files(tmp_path / "sql")


def test_explain_prints_the_plan_and_spends_nothing(files: dict[str, Path], tmp_path: Path, capsys: Any) -> None:
    from dpspark.cli.app import main

    with session(files["measurements"], budget={"epsilon": "2", "delta": "1e-6"}) as s:
        text = s.sql(PRIVATE_KEYS, explain=True)
        assert str(s.remaining) == "eps = 2, delta = 1e-6" and not s.releases
    for word in ("composition", "people: +-", "private selection", "filter", "max_groups_per_unit"):
        assert word in text
    assert main(["sql", PRIVATE_KEYS, "--table", f"measurements={files['measurements']}", "--max-units", "100000",
                 "--explain"]) == 0
    assert "nothing was read and nothing was spent" in capsys.readouterr().out


Q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = user_id) "
REFUSED = {  # one per class of unsupported construct: (query, words its message holds)
    "no dp clause": ("SELECT region, COUNT(*) AS n FROM measurements GROUP BY region", "differential-privacy clause"),
    "select star": (Q + "* FROM measurements", "SELECT *"),
    "limit": (Q + "region, COUNT(*) AS n FROM measurements GROUP BY region LIMIT 2", "LIMIT"),
    "order by": (Q + "region, COUNT(*) AS n FROM measurements GROUP BY region ORDER BY n", "ORDER BY"),
    "having": (Q + "region, COUNT(*) AS n FROM measurements GROUP BY region HAVING n > 3", "HAVING"),
    "subquery": (Q + "COUNT(*) AS n FROM (SELECT * FROM measurements)", "subquery"),
    "cte": ("WITH m AS (SELECT 1) " + Q + "COUNT(*) AS n FROM measurements", "WITH"),
    "window": (Q + "COUNT(*) OVER () AS n FROM measurements", "window"),
    "union": (Q + "COUNT(*) AS n FROM measurements UNION ALL SELECT 1", "UNION"),
    "other statement": ("DELETE FROM measurements WHERE true", "DELETE"),
    "private join": (Q + "COUNT(*) AS n FROM measurements JOIN users USING (user_id)", "JOIN users"),
    "right join": (Q + "zone, COUNT(*) AS n FROM measurements RIGHT JOIN zones USING (region) GROUP BY zone",
                   "RIGHT JOIN"),
    "join on a non-equality": (Q + "zone, COUNT(*) AS n FROM measurements m JOIN zones z ON m.region < z.region "
                               "GROUP BY zone", "equal columns"),
    "join key types differ": (Q + "zone, COUNT(*) AS n FROM measurements JOIN zones ON measurements.age = "
                              "zones.age GROUP BY zone", "no column(s) 'age'"),
    "unknown table": (Q + "COUNT(*) AS n FROM orders", "unknown table 'orders'"),
    "public table": (Q + "COUNT(*) AS n FROM regions", "public table"),
    "ungrouped column": (Q + "region, COUNT(*) AS n FROM measurements", "neither aggregated nor in GROUP BY"),
    "non-dp aggregate": (Q + "MAX(age) AS m FROM measurements", "not a DP aggregate"),
    "unknown function": (Q + "MEDIAN_OF(age) AS m FROM measurements", "unknown function MEDIAN_OF"),
    "no alias": (Q + "COUNT(*) FROM measurements", "has no name"),
    "distinct": (Q + "COUNT(DISTINCT region) AS n FROM measurements", "DISTINCT"),
    "expression argument": (Q + "SUM(hours * 2, contribution_bounds_per_group => (0, 1)) AS h FROM measurements",
                            "not a column"),
    "function in where": (Q + "COUNT(*) AS n FROM measurements WHERE UPPER(region) = 'N'", "WHERE"),
    "cast in where": (Q + "COUNT(*) AS n FROM measurements WHERE CAST(age AS STRING) = '3'", "WHERE"),
    "group by expression": (Q + "COUNT(*) AS n FROM measurements GROUP BY 1", "GROUP BY"),
    "unknown option": ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_units = 5) COUNT(*) AS n "
                       "FROM measurements", "unknown option 'max_units'"),
    "other unit": ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = "
                   "region) COUNT(*) AS n FROM measurements", "privacy_unit_column"),
    "parse error": (Q + "COUNT(* AS n FROM measurements", "does not parse"),
    "filter type": (Q + "region, COUNT(*) AS n FROM measurements WHERE region > 3 GROUP BY region", "region"),
    "missing column": (Q + "region, COUNT(*) AS n FROM measurements WHERE nowhere = 1 GROUP BY region", "nowhere"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_unsupported_constructs_are_refused_before_the_spend(files: dict[str, Path], tmp_path: Path,
                                                               name: str) -> None:
    from dpspark.errors import DPSparkError
    from dpspark.ledger import Ledger

    query, words = REFUSED[name]
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("m", "4", "1e-6")
    with session(files["measurements"], ledger=ledger, dataset="m") as s:
        with pytest.raises(DPSparkError, match=re.escape(words)):
            s.sql(query, output=tmp_path / "out")
        assert not s.releases
    spent = Ledger(ledger).spent("m")
    assert (spent.epsilon, spent.delta) == (0, 0) and Ledger(ledger).releases("m") == []
    assert not (tmp_path / "out").exists()


def test_a_query_that_runs_is_charged_once(files: dict[str, Path], tmp_path: Path) -> None:
    """The refusal test above has teeth: the same ledger records a query that runs."""
    from dpspark.ledger import Ledger

    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("m", "4", "1e-6")
    with session(files["measurements"], ledger=ledger, dataset="m") as s:
        s.sql(PRIVATE_KEYS, output=tmp_path / "out")
    spent = Ledger(ledger).spent("m")
    assert spent.epsilon == 1 and spent.delta == Fraction(1, 10**9)


def test_a_join_clash_and_a_key_type_mismatch_are_refused_before_the_spend(files: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    import pyarrow as pa

    import dpspark
    from dpspark.errors import DPSparkError

    clash = pa.table({"region": ["north"], "age": [3]})  # 'age' is a private column too
    typed = pa.table({"region": [1, 2], "zone": ["a", "b"]})  # int keys against the private strings
    for dim, words in ((clash, "also in the input"), (typed, "join column 'region' is string in the input and int64")):
        with dpspark.Session(files["measurements"], max_units=100_000, unit_column="user_id",
                             budget={"epsilon": "3"}) as s:
            with pytest.raises(DPSparkError, match=words):
                s.groups(by="region", keys=["north"], epsilon="1", join={"table": dim, "on": "region"},
                         aggregates=[{"name": "n", "kind": "count"}], output=tmp_path / "o")
            assert str(s.remaining) == "eps = 3, pure DP" and not s.releases


def test_an_inner_join_drops_unmatched_rows_exactly(files: dict[str, Path], tmp_path: Path) -> None:
    """Bounded noise holds with probability 1: the joined counts are checked against pandas' merge."""
    import pyarrow as pa

    import dpspark
    from dpspark.rng import SeededRandom

    dim = pa.table({"region": ["north", "east"], "zone": ["cold", "warm"]})
    tab = measurements().to_pandas().merge(dim.to_pandas(), on="region")
    truth = tab.groupby("zone").size().to_dict()
    with dpspark.Session(files["measurements"], max_units=100_000, rng=SeededRandom(SEED)) as s:
        rel = s.groups(by="zone", keys=["cold", "warm", "mild"], epsilon="1", delta="1e-8", noise="bounded",
                       join={"table": dim, "on": "region"}, aggregates=[{"name": "n", "kind": "count"}],
                       output=tmp_path / "j")
    for key in rel.keys():
        entry = rel.lookup(key)["n"]
        assert abs(entry.value - truth.get(key, 0)) <= entry.always
    assert rel.manifest.parameters["join"]["on"] == ["region"] and rel.manifest.parameters["join"]["rows"] == 2
