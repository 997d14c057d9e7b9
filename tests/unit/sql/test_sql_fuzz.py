"""Fuzz: generated and mutated DP SQL queries either run or are refused before the spend, on the Arrow engine.

Each query runs through ``Session.sql`` on a small table ``t`` that shares its unit with a second private table
``u`` (one row per unit, or two for some). Queries join a public table with unique keys (``dims``) or with
duplicate keys (``dupdims``, multiplicity 2), the private table ``u`` on the unit (inner or left), or ``u`` on a
non-unit column (always refused before the spend, with a :class:`~dpspark.sql.SqlError`), and use STDDEV_POP. The outcome is one of two: a release (the session
budget is charged once), or a :class:`~dpspark.errors.DPSparkError` with the budget and the output folder
untouched. Anything else fails the test: a foreign exception, a refusal after the spend, or a query that
takes more than a public time bound. The default suite runs a small sample; ``-m slow`` runs >= 5,000.
Query generation uses a seeded ``random.Random``: it picks test inputs, never noise.
The per-query check (:func:`attempt`) is shared with tests/system/spark/test_sql_fuzz_engines.py, which runs
the same queries on both engines and compares them.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from dpspark.errors import DPSparkError

COLUMNS = {"user_id": "int", "region": "str", "age": "int", "hours": "float", "flag": "bool"}
TABLES = ["t", "t", "t", "keys", "other", "u"]
AGGS = ["COUNT", "SUM", "AVG", "VAR_POP", "STDDEV_POP", "PERCENTILE_CONT", "MAX", "MIN", "COUNT_IF", "APPROX_COUNT"]
OPTIONS = ["epsilon = 1", "epsilon = 0.5", "epsilon = 5e-1", "epsilon = 0", "epsilon = -1", "epsilon = 100",
           "delta = 1e-9", "delta = 1e-6", "delta = 0.5", "privacy_unit_column = user_id", "privacy_unit_column = age",
           "max_groups_contributed = 2", "max_groups_contributed = 0", "max_rows_per_group = 3",
           "max_rows_per_group = 1.5", "keys = keys", "keys = t", "noise = 'pure'", "noise = 'zcdp'",
           "noise = 'bounded'", "noise = 'wild'", "beta = '1/10'", "beta = 2", "max_units = 3", "epsilon = 'abc'",
           "max_rows_per_unit = 2", "max_rows_per_unit = 0", "max_rows_per_unit = 99999"]
TAILS = ["", "", "", "", " LIMIT 3", " ORDER BY 1", " HAVING COUNT(*) > 1", " QUALIFY 1 = 1", " OFFSET 2"]
MUTATIONS = ["(", ")", ",", "'", "`", " AND ", " OR ", " NOT ", " NULL ", " SELECT ", " FROM ", "=>", " * ", "--",
             "/*", ";", " OVER () ", " 1e400 ", " -", " CAST(", " UNION ALL SELECT 1", "\\", "\n", "é", "\x00"]
#: most seconds one query may take (parse, check, plan, a release of 240 rows): a hang fails the test. Generous:
#: certifying a quantile's law at a small epsilon share takes ~15 s on an idle core (groups/quantile.py)
MAX_SECONDS = 300
#: queries per session: a runnable query spends epsilon <= 2, so 25 of them stay within the session's 60 (a
#: session counted by its releases, as before, was never renewed once its budget ran out: every later query
#: was refused by the budget, and the slow fuzz ran 48 queries of 5,000)
SESSION_QUERIES = 25


def _literal(rng: random.Random, column: str, clean: bool) -> str:
    kind = COLUMNS.get(column, "str")
    choices = {"int": ["0", "18", "-3", "65", "1e2"], "float": ["0.5", "40", "-1.25", "1e-3"],
               "str": ["'north'", "'south'", "''", "'it\\'s'"], "bool": ["TRUE", "FALSE"]}[kind]
    if not clean and rng.random() < 0.2:  # a literal of another type: refused from the schema, before the spend
        choices = ["'x'", "3", "TRUE", "NULL", "DATE '2020-01-01'"]
    return rng.choice(choices)


def _column(rng: random.Random, clean: bool) -> str:
    return rng.choice(list(COLUMNS) + ([] if clean else ["nowhere", "t.region", "q.age"]))


def _condition(rng: random.Random, clean: bool, depth: int = 0) -> str:
    r = rng.random()
    if depth < 3 and r < 0.3:
        op = rng.choice([" AND ", " OR "])
        return "(" + op.join(_condition(rng, clean, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    if depth < 3 and r < 0.4:
        return "NOT " + _condition(rng, clean, depth + 1)
    c = _column(rng, clean)
    form = rng.randrange(8 if clean else 9)
    if form == 0:
        return f"{c} IN ({', '.join(_literal(rng, c, clean) for _ in range(rng.randint(1, 3)))})"
    if form == 1:
        return f"{c} BETWEEN {_literal(rng, c, clean)} AND {_literal(rng, c, clean)}"
    if form == 2:
        return f"{c} IS {rng.choice(['', 'NOT '])}NULL"
    if form == 8:
        return rng.choice([f"UPPER({c}) = 'A'", f"{c} + 1 > 2", f"{c} LIKE 'a%'", f"{c} IN (SELECT 1)",
                           f"CAST({c} AS STRING) = '1'", f"{c} = {c}"])
    op = rng.choice(["=", "!=", "<>", "<", "<=", ">", ">="] if COLUMNS[c.split(".")[-1]] != "bool" or not clean
                    else ["=", "!="]) if c.split(".")[-1] in COLUMNS else "="
    lit = _literal(rng, c, clean)
    return f"{c} {op} {lit}" if rng.random() < 0.8 else f"{lit} {op} {c}"


def _aggregate(rng: random.Random, i: int, clean: bool, grouped: bool, private: bool = False) -> str:
    fns = ["COUNT", "SUM", "AVG", "VAR_POP", "STDDEV_POP", "PERCENTILE_CONT"] if grouped else ["COUNT", "SUM", "AVG"]
    fn = rng.choice(fns if clean else AGGS)
    cols = ["hours", "age"] + (["score"] if private else [])
    col = rng.choice(cols if clean else cols + ["region", "flag", "nowhere", "score"])
    lo, hi = rng.choice([("0", "80"), ("-10", "10"), ("0", "1e3")] if clean else
                        [("0", "80"), ("5", "1"), ("0", "0.5"), ("-1e30", "1e30")])
    bounds = f", contribution_bounds_per_group => ({lo}, {hi})" if clean or rng.random() < 0.8 else ""
    if fn == "COUNT":
        call = "COUNT(*)" if clean and grouped else rng.choice(["COUNT(*)", f"COUNT({col})", f"COUNT(DISTINCT {col})"
                                                                ][: 2 if clean else 3])
    elif fn == "PERCENTILE_CONT":
        call = f"PERCENTILE_CONT({col}, {rng.choice(['0.5', '0.9'] if clean else ['0.5', '1', '0'])}{bounds})"
    else:
        call = f"{fn}({col}{bounds})"
    return call + (f" AS a{i}" if clean or rng.random() < 0.9 else "")


#: the joins a query may have: a public one (unique or duplicate keys) or a private one on the unit (inner,
#: left); PRIVATE_OFF_UNIT joins the private table on another column (refused before the spend, a SqlError)
PUBLIC_JOINS = [" JOIN dims USING (region)", " LEFT JOIN dims d ON t.region = d.region", " JOIN dupdims USING (region)",
                " LEFT JOIN dupdims USING (region)"]
PRIVATE_JOINS = [" JOIN u USING (user_id)", " LEFT JOIN u USING (user_id)", " INNER JOIN u ON t.user_id = u.user_id"]
PRIVATE_OFF_UNIT = [" JOIN u USING (tier)", " LEFT JOIN u ON t.age = u.score", " JOIN u ON t.region = u.tier"]


def _join(rng: random.Random, clean: bool) -> tuple[str, str]:
    """("", "") or (a join clause, its kind: "public", "private" or "off-unit")."""
    r = rng.random()
    if r < 0.45:
        return "", ""
    if r < 0.7:
        return rng.choice(PUBLIC_JOINS), "public"
    if r < 0.92:
        return rng.choice(PRIVATE_JOINS), "private"
    return rng.choice(PRIVATE_OFF_UNIT), "off-unit"


def generated(rng: random.Random, clean: bool) -> str:
    """One query of the supported subset (``clean``; a join on a non-unit column of the private table ``u`` is
    always refused), or one with a few constructs outside it."""
    join, kind = _join(rng, clean)
    extra = {"public": ["zone"], "private": ["tier"], "off-unit": ["tier"]}.get(kind, [])
    by = rng.sample(["region", "age", "flag"] + extra, rng.choice([0, 1, 1, 2]))
    opts = [rng.choice(["epsilon = 1", "epsilon = 0.5", "epsilon = 2e0"]), "privacy_unit_column = user_id"]
    if by and rng.random() < 0.4:
        opts.append("keys = keys")
    if rng.random() < 0.8:
        opts.append("delta = 1e-9")
    opts += rng.sample(["max_groups_contributed = 2", "max_rows_per_group = 3", "noise = 'pure'", "noise = 'zcdp'",
                        "beta = '1/10'"] if by else ["noise = 'zcdp'", "beta = '1/10'"], rng.randint(0, 2))
    if kind == "private" and rng.random() < 0.4:  # the rows each table keeps per unit before the join
        opts.append(rng.choice(["max_rows_per_unit = 1", "max_rows_per_unit = 2", "max_rows_per_unit = 5"]))
    if not clean:
        opts += rng.sample(OPTIONS, rng.randint(0, 2))
        if rng.random() < 0.3:
            opts.remove(opts[0])
    items = list(by) + [_aggregate(rng, i, clean, bool(by), kind in ("private", "off-unit"))
                        for i in range(rng.randint(1, 3))]
    if not clean and rng.random() < 0.1:
        items.append(rng.choice(["*", "age", "region AS r", "1 + 1 AS k"]))
    rng.shuffle(items)
    clause = "WITH DIFFERENTIAL_PRIVACY OPTIONS (" + ", ".join(opts) + ") " if clean or rng.random() < 0.9 else ""
    text = f"SELECT {clause}{', '.join(items)} FROM {'t' if clean else rng.choice(TABLES)}"
    if join and not clean and rng.random() < 0.4:  # now and then a join outside the subset
        join = rng.choice([" RIGHT JOIN dims USING (region)", " JOIN keys USING (region)", " FULL JOIN u USING (user_id)",
                           " JOIN dims ON t.age = dims.region", " CROSS JOIN dims", " JOIN dims USING (zone)",
                           " JOIN t USING (user_id)", " RIGHT JOIN u USING (user_id)", " JOIN u, dims"])
    text += join
    if rng.random() < 0.6:
        text += " WHERE " + _condition(rng, clean)
    if by:
        text += " GROUP BY " + ", ".join(by)
    return text + ("" if clean else rng.choice(TAILS))


def mutated(rng: random.Random, text: str) -> str:
    """``text`` with a few random edits: a cut, a duplicated span, an inserted token."""
    for _ in range(rng.randint(1, 3)):
        i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        edit = rng.randrange(3)
        if edit == 0:
            text = text[:i] + text[j:]
        elif edit == 1:
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i] + rng.choice(MUTATIONS) + text[i:]
    return text


def queries(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        r = rng.random()
        q = generated(rng, clean=r < 0.7)
        out.append(mutated(rng, q) if r > 0.85 else q)
    return out


def _table() -> Any:
    import pyarrow as pa

    rows = 240
    return pa.table({"user_id": [i % 60 for i in range(rows)],
                     "region": [["north", "south", "east", None][i % 4] for i in range(rows)],
                     "age": [16 + (i * 7) % 70 for i in range(rows)],
                     "hours": [None if i % 11 == 0 else float((i * 13) % 90) / 2 for i in range(rows)],
                     "flag": [i % 3 == 0 for i in range(rows)]})


def _users() -> Any:
    """The second private table (unit user_id): units 0..49 (t has 0..59), units 0..9 with two rows."""
    import pyarrow as pa

    ids = list(range(50)) + list(range(10))
    return pa.table({"user_id": ids, "tier": [["gold", "silver", None][i % 3] for i in ids],
                     "score": [(i * 17) % 40 - 5 for i in range(len(ids))]})


#: the fuzz session's public tables: key lists, and dimension tables with unique and with duplicate keys
PUBLIC = ["keys", "dims", "dupdims"]


def fuzz_tables() -> dict[str, Any]:
    """The fuzz session's tables: t and u private (they share the unit user_id), :data:`PUBLIC` public."""
    import pyarrow as pa

    keys = pa.table({"region": ["north", "south", "west"], "age": [18, 30, 40], "flag": [True, False, True],
                     "hours": [1, 2, 3]})
    dims = pa.table({"region": ["north", "south", "east"], "zone": ["cold", "warm", "warm"]})
    dupdims = pa.table({"region": ["north", "north", "south", "east", None], "zone": ["cold", "mild", "warm", "warm",
                                                                                     "cold"]})
    return {"t": _table(), "u": _users(), "keys": keys, "dims": dims, "dupdims": dupdims}


#: the session budget: renewed every SESSION_QUERIES queries
BUDGET = {"epsilon": "60", "delta": "1/1000"}


def fuzz_session(tables: dict[str, Any], i: int, spark: Any = None) -> Any:
    """The fuzz session renewed at query ``i`` (seeded by ``i``): one engine's, the same on both engines."""
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(tables=tables, public_tables=PUBLIC, max_units=1000, unit_column="user_id",
                           rng=SeededRandom(i), budget=BUDGET, spark=spark)


def new_counts() -> dict[str, int]:
    """The fuzz's counters (:func:`attempt`)."""
    return {"ran": 0, "refused": 0, "public": 0, "private": 0, "off-unit": 0, "stddev": 0, "budget": 0}


def attempt(s: Any, query: str, out: Path, counts: dict[str, int]) -> str | None:
    """Run ``query`` on session ``s`` to ``out``, asserting one of the two outcomes within :data:`MAX_SECONDS`:
    None when it ran (the budget charged, the release left at ``out``), or its refusal ``"Class: message"``
    (a DPSparkError; the budget and ``out`` untouched; a join off the unit is a SqlError). Counts it."""
    from dpspark.api.charge import SessionBudgetExceeded
    from dpspark.sql import SqlError

    before = s.remaining.measure
    off_unit = any(j in query for j in PRIVATE_OFF_UNIT)
    started = time.monotonic()
    refusal = None
    try:
        s.sql(query, output=out)
    except DPSparkError as err:
        assert s.remaining.measure == before, f"refused after the spend: {query!r}: {err}"
        assert not out.exists(), query
        assert str(err), query
        assert not off_unit or isinstance(err, SqlError), f"{type(err).__name__} for {query!r}: {err}"
        counts["refused"] += 1
        counts["off-unit"] += off_unit
        counts["budget"] += isinstance(err, SessionBudgetExceeded)
        refusal = f"{type(err).__name__}: {err}"
    except Exception as err:  # a foreign exception is a bug (the message names the query)
        raise AssertionError(f"foreign {type(err).__name__} for {query!r}: {err}") from err
    else:
        assert not off_unit, f"a join of the private tables off the unit ran: {query!r}"
        assert s.remaining.measure != before and (out / "manifest.json").exists(), query
        counts["ran"] += 1
        counts["private"] += any(j in query for j in PRIVATE_JOINS)
        counts["public"] += any(j in query for j in PUBLIC_JOINS)
        counts["stddev"] += "STDDEV_POP(" in query
    assert time.monotonic() - started < MAX_SECONDS, f"query took too long: {query!r}"
    return refusal


def run_fuzz(tmp_path: Path, seed: int, n: int) -> dict[str, int]:
    """Run n queries; returns how many ran and how many were refused (asserting the two outcomes only), and
    how many of each join kind ran (``public``, ``private``) or were refused (``off-unit``: always)."""
    import shutil

    counts = new_counts()
    tables = fuzz_tables()
    s: Any = None
    for i, query in enumerate(queries(seed, n)):
        if i % SESSION_QUERIES == 0:  # a fresh session now and then: a runnable query's budget never runs out
            s = fuzz_session(tables, i)
        out = tmp_path / f"r{i}"
        if attempt(s, query, out, counts) is None:
            shutil.rmtree(out)
    return counts


def check_counts(counts: dict[str, int], n: int) -> None:
    """The lower bounds a fuzz of ``n`` >= 5,000 queries meets: both outcomes, every join kind, STDDEV_POP."""
    assert counts["ran"] + counts["refused"] == n and counts["ran"] >= n // 5
    assert counts["budget"] <= counts["refused"] // 20  # refused by the budget: only the queries that ask too much
    assert counts["private"] >= n // 50 and counts["public"] >= n // 50 and counts["off-unit"] >= n // 100
    assert counts["stddev"] >= n // 100


def test_fuzz_sample(tmp_path: Path) -> None:
    counts = run_fuzz(tmp_path, seed=1, n=60)
    assert counts["ran"] >= 5 and counts["refused"] >= 5  # both outcomes are exercised
    assert counts["private"] >= 2 and counts["public"] >= 2 and counts["off-unit"] >= 1 and counts["stddev"] >= 1


@pytest.mark.slow
def test_fuzz_5000(tmp_path: Path) -> None:
    counts = run_fuzz(tmp_path, seed=2, n=5000)
    print(f"fuzz: {counts}")  # report
    check_counts(counts, 5000)
