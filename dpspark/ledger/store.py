"""The persistent privacy budget ledger (SQLite, stdlib ``sqlite3``).

One row per release attempt records the dataset id (a declared identity, not
a file path, so copying or renaming the data cannot reset its budget), the
exact epsilon and delta as rational strings, the mechanism name, the release
path, the creation time and a status. The budget is spent when the row is
written: callers must call :meth:`Ledger.spend` *before reading any data or
drawing any noise*, and a spend is never refunded. A release that then fails
is marked ``failed`` and still counts.

Each row also records the release's exact statement: its rho when the release states rho-zCDP under
add/remove (``spend(..., rho=...)``), else its charged (epsilon, delta) (pure when delta = 0). What the rows
have spent is charged to a privacy filter fixed when the total is declared (:mod:`dpspark.ledger.compose`):
an (epsilon, delta) total is a basic filter (the default, and every total stored by schema <= 4) or a zcdp
filter (a rho part the total converts to by CKS20, certified, plus a declared (epsilon, delta) share); a rho
total is a zCDP filter (the exact sum of rho, pure entries as eps^2/2). A spend is allowed iff the filter,
charged with it, stays within its parts: valid for adaptively chosen releases (docs/accounting.md).
Rows written by an older dpspark (no rho) stay (epsilon, delta) entries.

Each row may name a principal (an analyst: :mod:`dpspark.ledger.principal`); a principal's limit sits under
the dataset's total and is composed the same way over that principal's rows. A per-query limit caps each
spend's charged (epsilon, delta) (or rho). A dataset may refresh monthly (off by default; the operator's
act): then only the rows of the current UTC calendar month count. A refresh is not a guarantee across
windows: k months of releases compose to k totals. Each row carries the release id its manifest states
(128 random bits, ``dpspark verify --ledger`` matches by it).

Totals change only by an explicit operator act (:meth:`Ledger.set_total`,
``dpspark budget DATASET --total ...``). A release config may name totals:
:meth:`Ledger.spend` then sets them when the dataset has none, accepts them
when equal, and refuses the spend (:class:`TotalMismatch`, nothing written)
when they differ. A total the config does not name is left as it is.

The privacy unit is pinned per dataset at its first spend (:meth:`Ledger.spend`'s
``unit``: the unit column's name, or None for row level, stored as
``column:NAME`` or ``row``). Budgets spent under different units do not
compose: a row-level epsilon-release costs k*epsilon at user level for a user
with k rows. So a spend under another unit is refused (:class:`UnitMismatch`).

Concurrency: every check-and-spend runs inside ``BEGIN IMMEDIATE`` (SQLite's
write lock is taken before the spent sums are read), with a busy timeout, so
processes racing for the last budget are serialised and at most the ones that
fit succeed. No float decides anything here.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

from dpspark.errors import ParameterError
from dpspark.exact import RationalLike, parse_rational
from dpspark.ledger.compose import (
    FILTER_RULES,
    REFRESH_WINDOWS,
    Budget,
    entry_rho,
    left as _filter_left,
    refusal,
    rho_total,
    spent,
    window_start,
)
from dpspark.ledger.tables import check_table_name, parts, resolve_dataset
from dpspark.ledger.principal import check_principal
from dpspark.privacy.mixed_composition import Entry, converted_upper
from dpspark.ledger.errors import (
    BudgetExceeded,
    BudgetNotConfigured,
    LedgerError,
    LedgerUnreadable,
    TotalMismatch,
    UnitMismatch,
)

SCHEMA_ID = "dpspark-budget-ledger/5"
#: schema 1 had no units table, schema 2 no pinned n, schema 3 no rho, principal, release id, rho totals,
#: per-query limits or refresh; a writable open migrates them (pins nothing, every old row stays (epsilon, delta))
#: schema 4 had no filter rule per total (rule, share) and no noise law per row (law): its totals stay basic
OLD_SCHEMA_IDS = ("dpspark-budget-ledger/1", "dpspark-budget-ledger/2", "dpspark-budget-ledger/3",
                  "dpspark-budget-ledger/4")
ROW_UNIT = "row"
_UNITS_TABLE = """
CREATE TABLE IF NOT EXISTS units (
    dataset_id TEXT PRIMARY KEY,
    unit TEXT NOT NULL,
    pinned_at TEXT NOT NULL,
    max_units TEXT
)"""
_LIMITS_TABLE = """
CREATE TABLE IF NOT EXISTS principal_limits (
    dataset_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    epsilon_total TEXT,
    delta_total TEXT NOT NULL,
    rho_total TEXT,
    updated_at TEXT NOT NULL,
    rule TEXT,
    share_epsilon TEXT,
    share_delta TEXT,
    PRIMARY KEY (dataset_id, principal)
)"""
#: tables -> dataset (dpspark.ledger.tables): a table belongs to at most one dataset (the primary key)
_TABLES_TABLE = """
CREATE TABLE IF NOT EXISTS dataset_tables (
    table_name TEXT PRIMARY KEY,
    dataset_id TEXT NOT NULL,
    declared_at TEXT NOT NULL
)"""
#: columns added by schema 4 (table -> TEXT columns); older ledgers gain them on a writable open
_NEW_COLUMNS = {
    "budgets": ("rho_total", "query_epsilon", "query_delta", "query_rho", "refresh", "rule", "share_epsilon",
                "share_delta"),
    "releases": ("rho", "principal", "release_id", "law"),
}
RELEASE_ID = re.compile(r"^[0-9a-f]{32}$")

#: dataset ids: 1-200 chars, letters, digits and ``._:@+-``, starting with a letter or digit (no '/', not a path)
DATASET_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}$")

STATUS_SPENT = "spent"  # budget committed; the release is running (or crashed before reporting)
STATUS_RELEASED = "released"
STATUS_FAILED = "failed"
STATUSES = (STATUS_SPENT, STATUS_RELEASED, STATUS_FAILED)

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('schema', '{SCHEMA_ID}');
CREATE TABLE budgets (
    dataset_id TEXT PRIMARY KEY,
    epsilon_total TEXT NOT NULL,
    delta_total TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    rho_total TEXT,
    query_epsilon TEXT,
    query_delta TEXT,
    query_rho TEXT,
    refresh TEXT,
    rule TEXT,
    share_epsilon TEXT,
    share_delta TEXT
);
CREATE TABLE releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    release_path TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('spent', 'released', 'failed')),
    finished_at TEXT,
    rho TEXT,
    principal TEXT,
    release_id TEXT,
    law TEXT
);
CREATE INDEX releases_by_dataset ON releases (dataset_id, id);
CREATE UNIQUE INDEX releases_by_release_id ON releases (release_id);
""" + _UNITS_TABLE + ";\n" + _LIMITS_TABLE + ";\n" + _TABLES_TABLE + ";\n"


@dataclass(frozen=True)
class SpendRecord:
    """One ledger row: a release attempt and the budget it spent (spent even if it failed)."""

    id: int
    dataset_id: str
    epsilon: Fraction
    delta: Fraction
    mechanism: str
    release_path: str
    created_at: str
    status: str
    finished_at: str | None
    rho: Fraction | None = None  # the release's exact zCDP statement, when it has one
    principal: str | None = None
    release_id: str | None = None  # the id its manifest states (32 hex digits); None on older rows
    law: str | None = None  # the release's noise law (JSON, dpspark.privacy.pld), when it stated one

    @property
    def entry(self) -> Entry:
        """The row as the composition sees it."""
        return Entry(self.epsilon, self.delta, self.rho, self.law)


@dataclass(frozen=True)
class PrincipalSummary:
    """One principal's limit (None: none set), what its rows spent and what is left of the limit."""

    principal: str | None  # None: the spends that named no principal
    limit: Budget | None
    spent: Budget
    remaining: Budget | None
    rule: str
    releases: int


@dataclass(frozen=True)
class LedgerSummary:
    """Everything ``dpspark budget`` shows for one dataset."""

    dataset_id: str
    total: Budget | None
    spent: Budget
    remaining: Budget | None  # None when no total is configured; may be negative if the total was lowered
    releases: tuple[SpendRecord, ...]
    unit: str | None = None  # the pinned privacy unit ("row" or "column:NAME"); None before the first spend
    rule: str = "basic"  # the admission filter that gave ``spent`` (basic or zcdp: dpspark.ledger.compose)
    principals: tuple[PrincipalSummary, ...] = ()
    query_limit: Budget | None = None
    refresh: str | None = None
    window_start: str | None = None  # the current refresh window's start; rows before it do not count
    tables: tuple[str, ...] = ()  # the tables declared in this dataset (dpspark.ledger.tables)


def unit_key(unit_column: str | None) -> str:
    """The stored form of a privacy unit: ``row`` (one input row is one unit) or ``column:NAME``."""
    if unit_column is None:
        return ROW_UNIT
    if not isinstance(unit_column, str) or not unit_column:
        raise ValueError("unit must be the unit column's name (a non-empty string) or None for row level")
    return f"column:{unit_column}"


def unit_words(key: str) -> str:
    """A stored privacy unit in words."""
    if key == ROW_UNIT:
        return "row level (each input row is one unit)"
    return f"unit column {key.split(':', 1)[1]!r} (all rows of one unit count as one)"


def check_dataset_id(dataset_id: object) -> str:
    """Validate a declared dataset id (not a path: no '/', see ``DATASET_ID``)."""
    if not isinstance(dataset_id, str) or not DATASET_ID.match(dataset_id):
        raise ParameterError(
            "dataset_id must be a declared identifier of 1-200 characters from [A-Za-z0-9._:@+-] "
            "starting with a letter or digit (not a file path, so a copy or rename cannot reset the budget)"
        )
    return dataset_id


def _amount(value: RationalLike, name: str, *, below_one: bool = False) -> Fraction:
    out = parse_rational(value, name)
    if out < 0:
        raise ParameterError(f"{name} must be >= 0, got {out}")
    if below_one and out >= 1:
        raise ParameterError(f"{name} must be < 1, got {out}")
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


#: check_spend's default: the principal is not known to this preflight, so its limit is not checked
ANY_PRINCIPAL: Any = object()


@lru_cache(maxsize=1 << 14)
def _parse_fraction(text: str) -> Fraction:
    """A stored amount (a ledger repeats the same few amounts: parsed once each)."""
    return Fraction(text)


def _declared(epsilon: RationalLike | None, delta: RationalLike, rho: RationalLike | None, what: str,
              rule: str | None = None, share: tuple[RationalLike, RationalLike] | None = None) -> Budget:
    """A declared total or limit: exactly one of epsilon and rho (delta: the total delta, or rho's display delta).

    ``rule`` (an (epsilon, delta) total's filter, :mod:`dpspark.ledger.compose`): ``basic`` (default) or
    ``zcdp``; ``share``: with ``zcdp``, the (epsilon, delta) kept for releases composed basically."""
    if (epsilon is None) == (rho is None):
        raise ParameterError(f"a {what} is declared in epsilon (with delta) or in rho, exactly one of them")
    d = _amount(delta, f"{what} delta", below_one=True)
    if rule is not None and rule not in FILTER_RULES:
        raise ParameterError(f"a {what}'s rule is one of {', '.join(FILTER_RULES)}, got {rule!r}")
    if rho is not None:
        if rule == "basic" or share is not None:
            raise ParameterError(f"a {what} in rho is a zCDP filter: it takes no rule 'basic' and no share")
        return rho_total(_amount(rho, f"{what} rho"), d)
    eps = _amount(epsilon, f"{what} epsilon")
    if share is not None and rule != "zcdp":
        raise ParameterError(f"a share of the {what} needs rule 'zcdp'")
    if rule != "zcdp":
        return Budget(eps, d)
    se, sd = (_amount(share[0], f"{what} share epsilon"), _amount(share[1], f"{what} share delta", below_one=True)) \
        if share is not None else (Fraction(0), Fraction(0))
    if se > eps or sd >= d:
        raise ParameterError(f"a zcdp {what}'s share ({se}, {sd}) must leave epsilon >= 0 and delta > 0 of the "
                             f"{what} ({eps}, {d}) for its rho part (a zcdp filter needs delta > 0)")
    return Budget(eps, d, None, "zcdp", (se, sd))


def total_from(obj: Any) -> Budget:
    """A total from ``{"epsilon": ..., "delta": ...}`` or ``{"rho": ...[, "delta": display delta]}`` (exact values)."""
    if not isinstance(obj, Mapping) or not obj or not set(obj) <= {"epsilon", "delta", "rho", "rule", "share"}:
        raise ParameterError('a total is {"epsilon": ..., "delta": ...[, "rule": "basic"|"zcdp", "share": [eps, '
                             'delta]]} or {"rho": ...}, exact strings or Fractions')
    share = obj.get("share")
    if share is not None and (not isinstance(share, (list, tuple)) or len(share) != 2):
        raise ParameterError('a total\'s "share" is [epsilon, delta]')
    return _declared(obj.get("epsilon"), obj.get("delta", 0), obj.get("rho"), "total", obj.get("rule"),
                     None if share is None else (share[0], share[1]))


def _raises(old: Budget, new: Budget) -> bool:
    """Whether ``new`` raises ``old`` (or changes its form, which is not comparable)."""
    if (old.rho is None) != (new.rho is None) or (old.rule, old.share) != (new.rule, new.share):
        return True
    if new.rho is not None:
        return new.rho > old.rho  # type: ignore[operator]
    return new.epsilon > old.epsilon or new.delta > old.delta


def check_law(law: Any, eps: Fraction, delta: Fraction, rho: Fraction | None) -> str:
    """The law's stored text, after checking it is no worse than the charge (the PLD statement may use the law
    in place of the charge, so a law must not describe a bigger release): pure eps' <= eps; approx within
    (eps, delta); geometric Delta ln(base) <= eps (certified); discrete Gaussian Delta^2 / (2 sigma2) <= rho
    (or, without rho, its CKS20 conversion within (eps, delta > 0)); a law's bias a adds 4a to its epsilon
    and a factor 1 + 2a to its delta."""
    from dpspark.privacy.errors import PrivacyError
    from dpspark.privacy.pld import parse_law

    try:
        got = parse_law(law)
    except PrivacyError as err:
        raise ParameterError(f"noise law: {err}") from None
    p = got.params
    # a law with bias a: its implemented pair is within (1 +- a) of the law's, so its loss is at most the law's
    # plus ln((1 + a)/(1 - a)) <= 4a, and its delta at most (1 + 2a) times (dpspark.privacy.pld.bias_fold)
    # (copies k: k independent pairs, so k times the loss, the delta and the rho: basic composition)
    k = got.copies
    slack, grow = 4 * got.bias, 1 + 2 * got.bias
    if got.kind == "pure":
        ok = k * (p[0] + slack) <= eps
    elif got.kind == "approx":
        ok = k * (p[0] + slack) <= eps and k * grow * p[1] <= delta
    elif got.kind == "geometric":
        import flint

        with flint.ctx.workprec(128):
            up = (k * int(p[1]) * flint.arb(flint.fmpq(p[0].numerator, p[0].denominator)).log()).upper()
            ok = bool(up + k * flint.arb(flint.fmpq(slack.numerator, slack.denominator))
                      <= flint.arb(flint.fmpq(eps.numerator, eps.denominator)))
    elif got.bias:
        raise ParameterError(f"the noise law {got.text()}: a discrete Gaussian with a bias has no checked rho")
    else:
        zr = k * p[1] * p[1] / (2 * p[0])
        ok = zr <= rho if rho is not None else (0 < delta < 1 and converted_upper(zr, delta) <= eps)
    if not ok:
        raise ParameterError(f"the noise law {got.text()} describes a bigger release than its charge (epsilon = "
                             f"{eps}, delta = {delta}" + (f", rho = {rho}" if rho is not None else "") + ")")
    return got.text()


def _rule_columns(b: Budget) -> tuple[str | None, str | None, str | None]:
    """The stored (rule, share_epsilon, share_delta) of a total or limit: NULLs for basic and rho."""
    if b.rho is None and b.rule == "zcdp":
        return "zcdp", str(b.share[0]), str(b.share[1])
    return None, None, None


def _flags(total: Budget) -> str:
    if total.rho is not None:
        return f"--total-rho {total.rho}" + (f" --delta-total {total.delta}" if total.delta else "")
    flags = f"--total {total.epsilon} --delta-total {total.delta}"
    if total.rule == "zcdp":
        flags += f" --rule zcdp --share-epsilon {total.share[0]} --share-delta {total.share[1]}"
    return flags


def _entry_words(e: Entry) -> str:
    if e.rho is not None:
        return f"rho = {e.rho}, charged epsilon = {e.epsilon}, delta = {e.delta}"
    return f"epsilon = {e.epsilon}, delta = {e.delta}"


def _over_query_limit(e: Entry, cap: Budget) -> str | None:
    """Why a spend exceeds the per-query limit (None: it does not)."""
    if cap.rho is not None:
        rho = e.rho if e.rho is not None else (e.epsilon * e.epsilon / 2 if e.delta == 0 else None)
        if rho is None or rho > cap.rho:
            return (f"this release ({_entry_words(e)}) exceeds the per-query limit rho = {cap.rho}"
                    + (" (an (epsilon, delta > 0) release states no rho)" if rho is None else ""))
        return None
    if e.epsilon > cap.epsilon or e.delta > cap.delta:
        return (f"this release ({_entry_words(e)}) exceeds the per-query limit epsilon = {cap.epsilon}, "
                f"delta = {cap.delta}")
    return None


def _exceeded_amounts(entries: list[Entry], new: Entry, total: Budget) -> dict[str, tuple[Fraction, ...]]:
    """BudgetExceeded's exact amounts: the spend, what is left (never below 0) and the total."""
    left = _left(total, spent(entries, total))
    assert left is not None
    if total.rho is not None:
        rho = entry_rho(new)
        rho = rho if rho is not None else Fraction(0)
        return {"requested": (rho,), "remaining": (max(left.rho or Fraction(0), Fraction(0)),), "total": (total.rho,)}
    zero = Fraction(0)
    return {"requested": (new.epsilon, new.delta), "remaining": (max(left.epsilon, zero), max(left.delta, zero)),
            "total": (total.epsilon, total.delta)}


def _left(total: Budget | None, got: Any) -> Budget | None:
    """What is left of ``total`` after the composition ``got`` (negative parts: overspent)."""
    if total is None:
        return None
    return _filter_left(total, got)


class Ledger:
    """A privacy budget ledger stored in the SQLite file at ``path``.

    ``create=False`` refuses to create a missing file; ``read_only=True`` (implies
    ``create=False``) opens it with SQLite's read-only mode, for reporting tools.
    ``timeout_seconds`` is SQLite's busy timeout while another process holds the lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        read_only: bool = False,
        timeout_seconds: float = 60.0,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if (read_only or not create) and not self.path.exists():
            raise LedgerUnreadable(f"no budget ledger at {self.path}")
        if self.path.exists() and not self.path.is_file():
            raise LedgerUnreadable(f"budget ledger {self.path} is not a regular file")
        self._timeout = timeout_seconds
        with self._connect() as conn:
            self._init_schema(conn)

    # -- connection handling -------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            if self.read_only:
                uri = self.path.resolve().as_uri() + "?mode=ro"
                conn = sqlite3.connect(uri, uri=True, timeout=self._timeout, isolation_level=None)
            else:
                conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise LedgerUnreadable(f"cannot open budget ledger {self.path}: {err}") from None
        try:
            if not self.read_only:
                conn.execute("PRAGMA synchronous = FULL")
            yield conn
        except sqlite3.OperationalError as err:
            if "locked" in str(err) or "busy" in str(err):
                raise LedgerError(
                    f"budget ledger {self.path} stayed locked by another process for {self._timeout} s: {err}"
                ) from None
            raise LedgerUnreadable(f"budget ledger {self.path} is unreadable or corrupt: {err}") from None
        except sqlite3.DatabaseError as err:
            raise LedgerUnreadable(f"budget ledger {self.path} is unreadable or corrupt: {err}") from None
        finally:
            conn.close()

    @contextmanager
    def _write(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """One write transaction holding SQLite's RESERVED lock from the start (BEGIN IMMEDIATE)."""
        if self.read_only:
            raise LedgerError(f"budget ledger {self.path} was opened read-only")
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # SQLite may already have rolled back (e.g. disk full)
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        check = conn.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise LedgerUnreadable(f"budget ledger {self.path} failed SQLite's integrity check")
        if not self._tables(conn) and not self.read_only:
            with self._write(conn):
                if not self._tables(conn):  # another process may have created it meanwhile
                    for statement in _SCHEMA.strip().split(";"):
                        if statement.strip():
                            conn.execute(statement)
        if not {"meta", "budgets", "releases"} <= self._tables(conn):
            raise LedgerUnreadable(f"{self.path} is an SQLite file but not a dpspark budget ledger")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] in OLD_SCHEMA_IDS and not self.read_only:
            with self._write(conn):
                if conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] != SCHEMA_ID:
                    self._migrate(conn)
            row = (SCHEMA_ID,)
        if row is None or row[0] not in (SCHEMA_ID, *OLD_SCHEMA_IDS):
            raise LedgerUnreadable(
                f"budget ledger {self.path} has schema {row[0] if row else None!r}, expected {SCHEMA_ID!r}"
            )
        if not self.read_only and "dataset_tables" not in self._tables(conn):
            conn.execute(_TABLES_TABLE)  # a schema-5 ledger written before the table map (one statement: atomic)

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Bring an older schema to this one inside the caller's write transaction; every row is kept as is."""
        conn.execute(_UNITS_TABLE)
        if "max_units" not in Ledger._columns(conn, "units"):  # schema 2: the pinned n arrived with schema 3
            conn.execute("ALTER TABLE units ADD COLUMN max_units TEXT")
        for table, names in _NEW_COLUMNS.items():  # schema 3: rho, principals, ids, limits, refresh
            have = Ledger._columns(conn, table)
            for name in names:
                if name not in have:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} TEXT")
        conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS releases_by_release_id ON releases (release_id)")
        conn.execute(_LIMITS_TABLE)
        conn.execute(_TABLES_TABLE)
        have = Ledger._columns(conn, "principal_limits")  # schema 4: no rule per limit
        for name in ("rule", "share_epsilon", "share_delta"):
            if name not in have:
                conn.execute(f"ALTER TABLE principal_limits ADD COLUMN {name} TEXT")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_ID,))

    @staticmethod
    def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}

    def _select(self, conn: sqlite3.Connection, table: str, names: tuple[str, ...]) -> str:
        """A select list of ``names``, NULL for a column an older ledger (opened read-only) lacks."""
        have = self._columns(conn, table)
        return ", ".join(n if n in have else f"NULL AS {n}" for n in names)

    @staticmethod
    def _tables(conn: sqlite3.Connection) -> set[str]:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    # -- parsing stored rows ------------------------------------------------

    def _stored_fraction(self, text: Any, what: str) -> Fraction:
        if not isinstance(text, str):
            raise LedgerUnreadable(f"budget ledger {self.path} holds a malformed {what} (not text)")
        try:
            value = _parse_fraction(text)
        except (ValueError, ZeroDivisionError):
            raise LedgerUnreadable(f"budget ledger {self.path} holds a malformed {what}: {text!r}") from None
        if value < 0:
            raise LedgerUnreadable(f"budget ledger {self.path} holds a negative {what}: {text!r}")
        return value

    def _optional_fraction(self, text: Any, what: str) -> Fraction | None:
        return None if text is None else self._stored_fraction(text, what)

    def _record(self, row: tuple[Any, ...]) -> SpendRecord:
        rid, ds, eps, delta, mech, path, created, status, finished, rho, principal, release_id, law = row
        if status not in STATUSES:
            raise LedgerUnreadable(f"budget ledger {self.path} holds an unknown status {status!r} (row {rid})")
        if release_id is not None and not (isinstance(release_id, str) and RELEASE_ID.match(release_id)):
            raise LedgerUnreadable(f"budget ledger {self.path} holds a malformed release id (row {rid})")
        return SpendRecord(
            id=int(rid),
            dataset_id=ds,
            epsilon=self._stored_fraction(eps, f"epsilon (row {rid})"),
            delta=self._stored_fraction(delta, f"delta (row {rid})"),
            mechanism=mech,
            release_path=path,
            created_at=created,
            status=status,
            finished_at=finished,
            rho=self._optional_fraction(rho, f"rho (row {rid})"),
            principal=principal,
            release_id=release_id,
            law=law,
        )

    _BUDGET_COLUMNS = ("epsilon_total", "delta_total", "rho_total", "query_epsilon", "query_delta", "query_rho",
                       "refresh", "rule", "share_epsilon", "share_delta")

    def _budget_row(self, conn: sqlite3.Connection, dataset_id: str) -> tuple[Any, ...] | None:
        cols = self._select(conn, "budgets", self._BUDGET_COLUMNS)
        return conn.execute(f"SELECT {cols} FROM budgets WHERE dataset_id = ?", (dataset_id,)).fetchone()

    def _total(self, conn: sqlite3.Connection, dataset_id: str) -> Budget | None:
        row = self._budget_row(conn, dataset_id)
        if row is None:
            return None
        return self._stored_total(row[0], row[1], row[2], f"total of {dataset_id!r}", row[7], row[8], row[9])

    def _stored_total(self, eps: Any, delta: Any, rho: Any, what: str, rule: Any = None, share_eps: Any = None,
                      share_delta: Any = None) -> Budget:
        """A stored total or limit; no rule (every total stored before filters, schema <= 4) is ``basic``."""
        d = self._stored_fraction(delta, f"{what} (delta)")
        if rho is not None:
            return rho_total(self._stored_fraction(rho, f"{what} (rho)"), d)
        eps_v = self._stored_fraction(eps, f"{what} (epsilon)")
        if rule is None or rule == "basic":
            return Budget(eps_v, d)
        if rule != "zcdp":
            raise LedgerUnreadable(f"budget ledger {self.path} holds an unknown rule {rule!r} for the {what}")
        return Budget(eps_v, d, None, "zcdp", (self._stored_fraction(share_eps or "0", f"{what} (share epsilon)"),
                                               self._stored_fraction(share_delta or "0", f"{what} (share delta)")))

    def _query_limit(self, conn: sqlite3.Connection, dataset_id: str) -> Budget | None:
        row = self._budget_row(conn, dataset_id)
        if row is None or (row[3] is None and row[5] is None):
            return None
        if row[5] is not None:
            return Budget(Fraction(0), Fraction(0), self._stored_fraction(row[5], "per-query rho"))
        return Budget(self._stored_fraction(row[3], "per-query epsilon"),
                      self._stored_fraction(row[4] if row[4] is not None else "0", "per-query delta"))

    def _refresh(self, conn: sqlite3.Connection, dataset_id: str) -> str | None:
        row = self._budget_row(conn, dataset_id)
        if row is None or row[6] is None:
            return None
        if row[6] not in REFRESH_WINDOWS:
            raise LedgerUnreadable(f"budget ledger {self.path} holds an unknown refresh window for {dataset_id!r}")
        return str(row[6])

    def _limits(self, conn: sqlite3.Connection, dataset_id: str) -> dict[str, Budget]:
        if "principal_limits" not in self._tables(conn):
            return {}
        cols = self._select(conn, "principal_limits", ("principal", "epsilon_total", "delta_total", "rho_total",
                                                           "rule", "share_epsilon", "share_delta"))
        rows = conn.execute(f"SELECT {cols} FROM principal_limits WHERE dataset_id = ? ORDER BY principal",
                            (dataset_id,)).fetchall()
        return {p: self._stored_total(e, d, r, f"limit of principal {p!r}", ru, se, sd)
                for p, e, d, r, ru, se, sd in rows}

    def _unit(self, conn: sqlite3.Connection, dataset_id: str) -> str | None:
        if "units" not in self._tables(conn):  # a schema-1 ledger opened read-only
            return None
        row = conn.execute("SELECT unit FROM units WHERE dataset_id = ?", (dataset_id,)).fetchone()
        if row is None:
            return None
        if not isinstance(row[0], str) or not (row[0] == ROW_UNIT or row[0].startswith("column:")):
            raise LedgerUnreadable(f"budget ledger {self.path} holds a malformed unit for {dataset_id!r}")
        return str(row[0])

    def _pinned_n(self, conn: sqlite3.Connection, dataset_id: str) -> int | None:
        """The dataset's pinned n (max_units), or None (not pinned yet, or an older ledger read-only)."""
        if "units" not in self._tables(conn):
            return None
        if "max_units" not in {r[1] for r in conn.execute("PRAGMA table_info(units)")}:
            return None
        row = conn.execute("SELECT max_units FROM units WHERE dataset_id = ?", (dataset_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        if not isinstance(row[0], str) or not row[0].isdigit():
            raise LedgerUnreadable(f"budget ledger {self.path} holds a malformed n for {dataset_id!r}")
        return int(row[0])

    _RELEASE_COLUMNS = ("id", "dataset_id", "epsilon", "delta", "mechanism", "release_path", "created_at", "status",
                        "finished_at", "rho", "principal", "release_id", "law")

    def _records(self, conn: sqlite3.Connection, dataset_id: str) -> list[SpendRecord]:
        cols = self._select(conn, "releases", self._RELEASE_COLUMNS)
        rows = conn.execute(f"SELECT {cols} FROM releases WHERE dataset_id = ? ORDER BY id", (dataset_id,)).fetchall()
        return [self._record(r) for r in rows]

    def _counted(self, conn: sqlite3.Connection, dataset_id: str) -> list[SpendRecord]:
        """The rows that count against the total now: all of them, or the current refresh window's."""
        records = self._records(conn, dataset_id)
        start = window_start(self._refresh(conn, dataset_id))
        return records if start is None else [r for r in records if r.created_at >= start]

    def _table_map(self, conn: sqlite3.Connection) -> dict[str, str]:
        if "dataset_tables" not in self._tables(conn):  # an older ledger opened read-only
            return {}
        return dict(conn.execute("SELECT table_name, dataset_id FROM dataset_tables").fetchall())

    def _resolve(self, conn: sqlite3.Connection, ds: str) -> str:
        """The dataset a charge to ``ds`` goes to (:func:`dpspark.ledger.tables.resolve_dataset`)."""
        return resolve_dataset(ds, self._table_map(conn))

    def _settable(self, conn: sqlite3.Connection, ds: str) -> str:
        """``ds`` for a curator's setting; a declared table (or a join of them) has no settings of its own."""
        owner = self._resolve(conn, ds)
        if owner != ds:
            raise LedgerError(f"{ds!r} belongs to dataset {owner!r} in {self.path}: set {owner!r}'s budget "
                              f"(`dpspark budget {owner} ...`)")
        return ds

    def declare_tables(self, dataset_id: str, tables: list[str]) -> dict[str, str]:
        """Declare that ``tables`` belong to ``dataset_id`` (the curator's act): from now on a charge to one of
        them, or to a '+'-joined set of them, is charged to ``dataset_id`` (:mod:`dpspark.ledger.tables`).

        Refused (nothing changes): a table already in another dataset; a table, or a name joining it, that
        already has a total, a limit, a pinned unit or a spend of its own (that history would escape the
        dataset's budget); a dataset id that names a declared table. Declaring a table again is a no-op.
        Returns the whole table -> dataset map.
        """
        ds = check_dataset_id(dataset_id)
        if not tables:
            raise ParameterError("declare at least one table")
        names = [check_table_name(check_dataset_id(t), ds) for t in tables]
        with self._connect() as conn, self._write(conn):
            have = self._table_map(conn)
            mine = [p for p in parts(ds) if p in have]
            if mine:
                raise LedgerError(f"{ds!r} names table {mine[0]!r} of dataset {have[mine[0]]!r} in {self.path}: "
                                  "a dataset id is not a declared table, nor a join of one")
            for t in names:
                if have.get(t, ds) != ds:
                    raise LedgerError(f"table {t!r} already belongs to dataset {have[t]!r} in {self.path}; a table "
                                      "belongs to at most one dataset")
            fresh = [t for t in names if t not in have]
            used = {r[0] for r in conn.execute(
                "SELECT dataset_id FROM budgets UNION SELECT dataset_id FROM releases UNION "
                "SELECT dataset_id FROM units UNION SELECT dataset_id FROM principal_limits")}
            for other in sorted(used - {ds}):
                hit = [t for t in fresh if t in parts(other)]
                if hit:
                    raise LedgerError(
                        f"{other!r} already has a budget, unit or spend of its own in {self.path}, and it names "
                        f"table {hit[0]!r}: its history would escape dataset {ds!r}'s budget. Nothing was declared.")
            when = _now()
            for t in fresh:
                conn.execute("INSERT INTO dataset_tables (table_name, dataset_id, declared_at) VALUES (?, ?, ?)",
                             (t, ds, when))
            return self._table_map(conn)

    def table_map(self) -> dict[str, str]:
        """Every declared table and its dataset."""
        with self._connect() as conn:
            return self._table_map(conn)

    def dataset_of(self, dataset_id: str) -> str:
        """The dataset a charge to ``dataset_id`` goes to (itself unless it names declared tables)."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            return self._resolve(conn, ds)

    @staticmethod
    def _compose(records: list[SpendRecord]) -> Budget:
        """Basic composition: exact sums of epsilon and of delta over every spend, failed ones included."""
        return Budget(sum((r.epsilon for r in records), Fraction(0)), sum((r.delta for r in records), Fraction(0)))

    # -- public API --------------------------------------------------------------

    def set_total(
        self,
        dataset_id: str,
        epsilon_total: RationalLike | None = None,
        delta_total: RationalLike = 0,
        *,
        rho_total: RationalLike | None = None,
        rule: str | None = None,
        share: tuple[RationalLike, RationalLike] | None = None,
        allow_increase: bool = False,
    ) -> Budget:
        """Set or change the dataset's total budget (exact): the operator's explicit act.

        The total is declared in (``epsilon_total``, ``delta_total``) or in ``rho_total`` (zCDP; then
        ``delta_total`` is only the delta at which ``dpspark budget`` also shows it in (epsilon, delta)).
        Raising an existing total, or changing its form, needs ``allow_increase``; lowering is allowed
        (even below what is spent: every spend is then refused). Setting the same total again is a no-op.
        A release config's totals never come here: :meth:`spend` checks them. Returns the total now in force.
        ``rule``: the (epsilon, delta) total's admission filter, ``basic`` (default) or ``zcdp`` with an optional
        ``share`` (epsilon, delta) for releases composed basically (:mod:`dpspark.ledger.compose`); changing
        the rule or share changes the total's form.
        """
        ds = check_dataset_id(dataset_id)
        new = _declared(epsilon_total, delta_total, rho_total, "total", rule, share)
        with self._connect() as conn, self._write(conn):
            self._settable(conn, ds)
            old = self._total(conn, ds)
            if old is not None and _raises(old, new) and not allow_increase:
                raise LedgerError(
                    f"dataset {ds!r} already has a total budget of {old} in {self.path}; raising it to "
                    f"{new} (or changing its form) is an explicit operator decision: run "
                    f"`dpspark budget {ds} {_flags(new)} --allow-increase` "
                    "(Python: Ledger.set_total(..., allow_increase=True))"
                )
            self._put_total(conn, ds, new, _now())
        return new

    @staticmethod
    def _put_total(conn: sqlite3.Connection, ds: str, total: Budget, when: str) -> None:
        eps = None if total.rho is not None else str(total.epsilon)
        conn.execute(
            "INSERT INTO budgets (dataset_id, epsilon_total, delta_total, rho_total, updated_at, rule, share_epsilon, "
            "share_delta) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dataset_id) DO UPDATE SET "
            "epsilon_total = excluded.epsilon_total, delta_total = excluded.delta_total, "
            "rho_total = excluded.rho_total, updated_at = excluded.updated_at, rule = excluded.rule, "
            "share_epsilon = excluded.share_epsilon, share_delta = excluded.share_delta",
            (ds, "0" if eps is None else eps, str(total.delta), None if total.rho is None else str(total.rho), when,
             *_rule_columns(total)),
        )

    def declare_total(self, dataset_id: str, total: Budget) -> None:
        """A caller's named total (``Session(total=...)``): set when the dataset has none, else it must equal it.

        Like a release config's totals: a differing one raises :class:`TotalMismatch` and changes nothing.
        """
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn, self._write(conn):
            ds = self._resolve(conn, ds)
            old = self._total(conn, ds)
            if old is None:
                self._put_total(conn, ds, total, _now())
            elif (old.rho, old.delta if old.rho is None else None, old.epsilon if old.rho is None else None,
                  old.rule, old.share) != (
                    total.rho, total.delta if total.rho is None else None, total.epsilon if total.rho is None else None,
                    total.rule, total.share):
                raise TotalMismatch(
                    f"dataset {ds!r}: the session names the total {total} but the ledger's total is {old} "
                    f"({self.path}). A session never changes a total; change it explicitly with `dpspark budget "
                    f"{ds} {_flags(total)} --allow-increase`, or name the ledger's total. Nothing was spent.")

    def set_principal_limit(
        self,
        dataset_id: str,
        principal: str,
        epsilon: RationalLike | None = None,
        delta: RationalLike = 0,
        *,
        rho: RationalLike | None = None,
        rule: str | None = None,
        share: tuple[RationalLike, RationalLike] | None = None,
        allow_increase: bool = False,
    ) -> Budget:
        """Set a principal's limit under the dataset's total, in (epsilon, delta) or in rho (the operator's act).

        ``rule`` / ``share``: the limit's own filter, as for :meth:`set_total` (basic by default).

        Once a dataset has a principal limit, every spend on it must name a principal that has one.
        Raising a limit (or changing its form) needs ``allow_increase``.
        """
        ds = check_dataset_id(dataset_id)
        who = check_principal(principal)
        new = _declared(epsilon, delta, rho, "limit", rule, share)
        with self._connect() as conn, self._write(conn):
            self._settable(conn, ds)
            old = self._limits(conn, ds).get(who)
            if old is not None and _raises(old, new) and not allow_increase:
                raise LedgerError(
                    f"principal {who!r} already has a limit of {old} on dataset {ds!r}; raising it is an explicit "
                    f"operator decision: add --allow-increase (Python: allow_increase=True)")
            conn.execute(
                "INSERT INTO principal_limits (dataset_id, principal, epsilon_total, delta_total, rho_total, updated_at, "
                "rule, share_epsilon, share_delta) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dataset_id, principal) DO UPDATE SET "
                "rule = excluded.rule, share_epsilon = excluded.share_epsilon, share_delta = excluded.share_delta, "
                "epsilon_total = excluded.epsilon_total, delta_total = excluded.delta_total, "
                "rho_total = excluded.rho_total, updated_at = excluded.updated_at",
                (ds, who, None if new.rho is not None else str(new.epsilon), str(new.delta),
                 None if new.rho is None else str(new.rho), _now(), *_rule_columns(new)),
            )
        return new

    def set_query_limit(
        self,
        dataset_id: str,
        epsilon: RationalLike | None = None,
        delta: RationalLike = 0,
        *,
        rho: RationalLike | None = None,
    ) -> Budget | None:
        """Cap every later spend's charge (like BigQuery's max_epsilon_per_query); all None clears the cap.

        In (epsilon, delta): a spend's charged epsilon and delta must each be <= the cap. In rho: its rho
        (pure: eps^2/2) must be <= the cap, and an (epsilon, delta > 0) spend is refused. Needs a total first.
        """
        ds = check_dataset_id(dataset_id)
        cap = None if epsilon is None and rho is None else _declared(epsilon, delta, rho, "per-query limit")
        with self._connect() as conn, self._write(conn):
            self._settable(conn, ds)
            if self._total(conn, ds) is None:
                raise BudgetNotConfigured(f"dataset {ds!r} has no total in {self.path}: set the total first")
            values = ((None, None, None) if cap is None else
                      (None, None, str(cap.rho)) if cap.rho is not None else (str(cap.epsilon), str(cap.delta), None))
            conn.execute("UPDATE budgets SET query_epsilon = ?, query_delta = ?, query_rho = ?, updated_at = ? "
                         "WHERE dataset_id = ?", (*values, _now(), ds))
        return cap

    def set_refresh(self, dataset_id: str, refresh: str | None, *, allow_increase: bool = False) -> None:
        """Turn the dataset's refresh window on (``"monthly"``) or off (None). Off by default.

        With a monthly refresh only the current UTC calendar month's spends count against the total, like
        AWS Clean Rooms' monthly refresh. It protects no one across months: a unit present for k months is
        covered by k totals, not one. So turning it on raises what may be spent and needs ``allow_increase``.
        """
        ds = check_dataset_id(dataset_id)
        if refresh is not None and refresh not in REFRESH_WINDOWS:
            raise ParameterError(f"refresh must be one of {list(REFRESH_WINDOWS)} or None, got {refresh!r}")
        with self._connect() as conn, self._write(conn):
            self._settable(conn, ds)
            if self._total(conn, ds) is None:
                raise BudgetNotConfigured(f"dataset {ds!r} has no total in {self.path}: set the total first")
            if refresh is not None and self._refresh(conn, ds) != refresh and not allow_increase:
                raise LedgerError(
                    f"a {refresh} refresh lets dataset {ds!r} spend its total again every window (no guarantee "
                    "across windows); turning it on is an explicit operator decision: add --allow-increase")
            conn.execute("UPDATE budgets SET refresh = ?, updated_at = ? WHERE dataset_id = ?", (refresh, _now(), ds))

    def total(self, dataset_id: str) -> Budget | None:
        """The configured total budget of a dataset, or None."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            return self._total(conn, ds)

    def principal_limits(self, dataset_id: str) -> dict[str, Budget]:
        """Every principal's limit on the dataset."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            return self._limits(conn, ds)

    def _check(
        self,
        conn: sqlite3.Connection,
        ds: str,
        new: Entry,
        unit: str,
        config_total: tuple[Fraction | None, Fraction | None],
        max_units: int | None = None,
        principal: Any = ANY_PRINCIPAL,
    ) -> tuple[Budget | None, bool]:
        """Every refusal of a spend, in one read: (total to insert if the config sets it, unit to pin?).

        Raises :class:`TotalMismatch`, :class:`BudgetNotConfigured`, :class:`UnitMismatch` or
        :class:`BudgetExceeded`; writes nothing. ``principal`` ANY_PRINCIPAL skips the principal's checks
        (a preflight that does not know the principal yet; the spend checks them).
        """
        cfg_eps, cfg_delta = config_total
        total = self._total(conn, ds)
        new_total = None
        how = "change it explicitly with `dpspark budget {ds} --total EPS [--delta-total DELTA] [--allow-increase]`"
        if total is None:
            if cfg_eps is None and cfg_delta is not None:
                raise BudgetNotConfigured(
                    f"dataset {ds!r} has no total privacy budget in {self.path} and the config names only "
                    f"total_delta; name total_epsilon too, or {how.format(ds=ds)}"
                )
            if cfg_eps is not None:
                new_total = total = Budget(cfg_eps, cfg_delta if cfg_delta is not None else Fraction(0))
        elif total.rho is not None and (cfg_eps is not None or cfg_delta is not None):
            raise TotalMismatch(
                f"dataset {ds!r}: the config names total_epsilon/total_delta but the ledger's total is declared in "
                f"rho ({total}) ({self.path}). A config never changes a total; {how.format(ds=ds)}, or leave the "
                "config's totals out. Nothing was spent.")
        else:
            differ = [
                f"total_{name} = {cfg} but the ledger's total {name} is {have}"
                for name, cfg, have in (("epsilon", cfg_eps, total.epsilon), ("delta", cfg_delta, total.delta))
                if cfg is not None and cfg != have
            ]
            if differ:
                raise TotalMismatch(
                    f"dataset {ds!r}: the config names {'; and '.join(differ)} ({self.path}). A config never "
                    f"changes a total; {how.format(ds=ds)}, or make the config match. Nothing was spent."
                )
        if total is None:
            raise BudgetNotConfigured(
                f"dataset {ds!r} has no total privacy budget in {self.path}; set one first "
                f"(`dpspark budget {ds} --total EPS`, Ledger.set_total, or total_epsilon in the config's [budget])"
            )
        pinned = self._unit(conn, ds)
        if pinned is not None and pinned != unit:
            raise UnitMismatch(
                f"dataset {ds!r} is pinned to the privacy unit {unit_words(pinned)} since its first spend, but this "
                f"release uses {unit_words(unit)}. Spends under different units do not add up to a valid total "
                "(a row-level epsilon costs k*epsilon for a unit with k rows), so it is refused; release under "
                "the pinned unit. Nothing was spent."
            )
        self._check_n(conn, ds, max_units)
        cap = self._query_limit(conn, ds)
        if cap is not None:
            over = _over_query_limit(new, cap)
            if over:
                raise BudgetExceeded(ds, over)
        counted = self._counted(conn, ds)
        why = refusal([r.entry for r in counted], new, total)
        if why:
            raise BudgetExceeded(ds, f"this release ({_entry_words(new)}) does not fit: {why}",
                                 **_exceeded_amounts([r.entry for r in counted], new, total))
        if principal is not ANY_PRINCIPAL:
            limits = self._limits(conn, ds)
            if limits:
                if principal is None or principal not in limits:
                    raise BudgetNotConfigured(
                        f"dataset {ds!r} has per-principal limits in {self.path}, and "
                        + ("this spend names no principal (give --principal, Session(principal=...) or "
                           "$DPSPARK_PRINCIPAL)" if principal is None else f"principal {principal!r} has none")
                        + f"; the curator sets one with `dpspark budget {ds} --principal NAME --limit EPS`. "
                        "Nothing was spent.")
                mine = [r.entry for r in counted if r.principal == principal]
                why = refusal(mine, new, limits[principal])
                if why:
                    raise BudgetExceeded(ds, f"this release ({_entry_words(new)}) does not fit the principal's "
                                         f"limit: {why}", principal, **_exceeded_amounts(mine, new, limits[principal]))
        return new_total, pinned is None

    def _spend_args(
        self,
        dataset_id: str,
        epsilon: RationalLike,
        delta: RationalLike,
        unit: str | None,
        config_total_epsilon: RationalLike | None,
        config_total_delta: RationalLike | None,
        rho: RationalLike | None = None,
        law: Any = None,
    ) -> tuple[str, Entry, str, tuple[Fraction | None, Fraction | None]]:
        ds = check_dataset_id(dataset_id)
        eps = _amount(epsilon, "epsilon")
        delta_v = _amount(delta, "delta", below_one=True)
        rho_v = None if rho is None else _amount(rho, "rho")
        if rho_v is not None and (rho_v == 0 or delta_v == 0):
            raise ParameterError("a zCDP spend needs rho > 0 and its charged delta > 0")
        if rho_v is not None and converted_upper(rho_v, delta_v) > eps:
            # the entry may be composed by its charged (epsilon, delta): that must be a valid statement of rho
            raise ParameterError(
                f"a zCDP spend's charged (epsilon, delta) = ({eps}, {delta_v}) must hold for its rho = {rho_v}: its "
                f"certified CKS20 epsilon at that delta is {converted_upper(rho_v, delta_v)}")
        cfg_eps = None if config_total_epsilon is None else _amount(config_total_epsilon, "total_epsilon")
        cfg_delta = None if config_total_delta is None else _amount(config_total_delta, "total_delta", below_one=True)
        law_text = None if law is None else check_law(law, eps, delta_v, rho_v)
        return ds, Entry(eps, delta_v, rho_v, law_text), unit_key(unit), (cfg_eps, cfg_delta)

    def _check_n(self, conn: sqlite3.Connection, ds: str, max_units: int | None) -> None:
        """Refuse a spend whose n does not compose with the dataset's pinned n (:class:`UnitMismatch`).

        A release without a declared max_units states AddRemove(UNITS_CAP), which covers AddRemove(m) for
        every m <= the cap: it composes with any pinned n up to the cap and pins nothing. A declared n above
        the cap is refused on a dataset whose earlier spends pinned no n (they may hold only up to the cap).
        """
        from dpspark.privacy.relations import UNITS_CAP

        pinned_n = self._pinned_n(conn, ds)
        if max_units is None:
            return
        if max_units == UNITS_CAP:
            if pinned_n is not None and pinned_n > UNITS_CAP:
                raise UnitMismatch(
                    f"dataset {ds!r} is pinned to n = {pinned_n} units at most (max_units), above the fixed cap "
                    "2^40 of a release without max_units; its statement holds only up to the cap and would not "
                    f"add up under n = {pinned_n}: declare max_units = {pinned_n}. Nothing was spent.")
            return
        if pinned_n is not None and pinned_n != max_units:
            raise UnitMismatch(
                f"dataset {ds!r} is pinned to n = {pinned_n} units at most (max_units) since its first spend, but this "
                f"release declares max_units = {max_units}. Every spend's statement is under add/remove among at "
                "most n units, and they add up to a valid total only under the same n; release with the pinned "
                "max_units. Nothing was spent."
            )
        if pinned_n is None and max_units > UNITS_CAP and self._records(conn, ds):
            raise UnitMismatch(
                f"dataset {ds!r} has spends without a declared max_units, stated for at most 2^40 units (the fixed "
                f"cap); this release declares max_units = {max_units} above it, and the two would not add up. "
                "Nothing was spent.")

    def check_spend(
        self,
        dataset_id: str,
        epsilon: RationalLike,
        delta: RationalLike,
        *,
        unit: str | None = None,
        config_total_epsilon: RationalLike | None = None,
        config_total_delta: RationalLike | None = None,
        max_units: int | None = None,
        rho: RationalLike | None = None,
        principal: Any = ANY_PRINCIPAL,
        law: Any = None,
    ) -> None:
        """Raise what :meth:`spend` would raise now, writing nothing (a preflight for ``--dry-run``).

        A later :meth:`spend` still checks again inside its transaction: another process may spend in
        between. ``principal`` left out: the principal's checks are skipped (the spend makes them).
        """
        ds, new, ukey, cfg = self._spend_args(dataset_id, epsilon, delta, unit, config_total_epsilon,
                                              config_total_delta, rho, law)
        who = principal if principal is ANY_PRINCIPAL or principal is None else check_principal(principal)
        with self._connect() as conn:
            conn.execute("BEGIN")  # one read snapshot
            try:
                self._check(conn, self._resolve(conn, ds), new, ukey, cfg, max_units, who)
            finally:
                conn.execute("COMMIT")

    def spend(
        self,
        dataset_id: str,
        epsilon: RationalLike,
        delta: RationalLike,
        mechanism: str,
        release_path: str | os.PathLike[str],
        *,
        unit: str | None = None,
        config_total_epsilon: RationalLike | None = None,
        config_total_delta: RationalLike | None = None,
        max_units: int | None = None,
        rho: RationalLike | None = None,
        principal: str | None = None,
        release_id: str | None = None,
        law: Any = None,
    ) -> SpendRecord:
        """Commit a spend of (epsilon, delta) on ``dataset_id``, or raise and record nothing.

        Call it before any data is read or any noise is drawn. The checks and the
        insert are one ``BEGIN IMMEDIATE`` transaction, so concurrent spenders are
        serialised. ``epsilon`` must be an exact rational upper bound on the
        release's privacy loss (e.g. the requested epsilon). ``rho``: the release's
        exact rho when it states rho-zCDP under add/remove (its certified conversion
        within (epsilon, delta)); the ledger then composes it in zCDP. ``principal``:
        the analyst charged (:mod:`dpspark.ledger.principal`). ``law``: the release's noise law
        (:func:`dpspark.privacy.pld.parse_law`), recorded for the PLD statement; it must be no worse than the
        charge (:func:`check_law`). ``release_id``: the id
        the release's manifest will state (32 lower-case hex digits, unique).
        ``unit`` is the release's unit column (None: row level); the first spend pins it
        and a later spend under another unit raises :class:`UnitMismatch`; ``max_units``
        (the release's n) is pinned alongside, so every spend composes under the
        same relation (add/remove among at most n units).
        ``config_total_epsilon`` / ``config_total_delta`` are the totals a
        release config names (None: not named): they set the total when the
        dataset has none, must equal it otherwise (:class:`TotalMismatch`), and
        an unnamed one is left unchanged. Other refusals:
        :class:`BudgetNotConfigured`, :class:`BudgetExceeded`. The returned
        record has status ``spent``; report the outcome with
        :meth:`mark_released` or :meth:`mark_failed` (the budget stays spent).
        """
        if not isinstance(mechanism, str) or not mechanism:
            raise ValueError("mechanism must be a non-empty string")
        ds, new, ukey, cfg = self._spend_args(
            dataset_id, epsilon, delta, unit, config_total_epsilon, config_total_delta, rho, law
        )
        who = None if principal is None else check_principal(principal)
        if release_id is not None and not (isinstance(release_id, str) and RELEASE_ID.match(release_id)):
            raise ParameterError("release_id must be 32 lower-case hex digits (128 bits)")
        path = os.fspath(release_path)
        created = _now()
        from dpspark.privacy.relations import UNITS_CAP

        with self._connect() as conn, self._write(conn):
            ds = self._resolve(conn, ds)  # inside the transaction: a table map declared meanwhile applies
            new_total, pin = self._check(conn, ds, new, ukey, cfg, max_units, who)
            if new_total is not None:
                self._put_total(conn, ds, new_total, created)
            # a release without max_units (the fixed cap) pins no n: it composes with any n up to the cap
            n_text = None if max_units is None or max_units == UNITS_CAP else str(int(max_units))
            if pin:
                conn.execute("INSERT INTO units (dataset_id, unit, pinned_at, max_units) VALUES (?, ?, ?, ?)",
                             (ds, ukey, created, n_text))
            elif n_text is not None and self._pinned_n(conn, ds) is None:
                conn.execute("UPDATE units SET max_units = ? WHERE dataset_id = ?", (n_text, ds))
            try:
                cur = conn.execute(
                    "INSERT INTO releases (dataset_id, epsilon, delta, mechanism, release_path, created_at, status, "
                    "rho, principal, release_id, law) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (ds, str(new.epsilon), str(new.delta), mechanism, path, created, STATUS_SPENT,
                     None if new.rho is None else str(new.rho), who, release_id, new.law),
                )
            except sqlite3.IntegrityError:
                raise LedgerError(f"release id {release_id} is already in budget ledger {self.path}") from None
            rid = cur.lastrowid
        assert rid is not None
        return SpendRecord(rid, ds, new.epsilon, new.delta, mechanism, path, created, STATUS_SPENT, None, new.rho,
                           who, release_id, new.law)

    def pinned_max_units(self, dataset_id: str) -> int | None:
        """The dataset's pinned n (max_units), or None before a spend that declared one."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            return self._pinned_n(conn, ds)

    def unit(self, dataset_id: str) -> str | None:
        """The dataset's pinned privacy unit (``row`` or ``column:NAME``), or None before its first spend."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            return self._unit(conn, ds)

    def _finish(self, spend_id: int, status: str) -> None:
        with self._connect() as conn, self._write(conn):
            row = conn.execute("SELECT status FROM releases WHERE id = ?", (spend_id,)).fetchone()
            if row is None:
                raise LedgerError(f"no spend with id {spend_id} in budget ledger {self.path}")
            if row[0] != STATUS_SPENT:
                raise LedgerError(f"spend {spend_id} in {self.path} is already {row[0]}")
            conn.execute("UPDATE releases SET status = ?, finished_at = ? WHERE id = ?", (status, _now(), spend_id))

    def mark_released(self, spend_id: int) -> None:
        """Record that the release of spend ``spend_id`` was written successfully."""
        self._finish(spend_id, STATUS_RELEASED)

    def mark_failed(self, spend_id: int) -> None:
        """Record that the release of spend ``spend_id`` failed; its budget stays spent (never refunded)."""
        self._finish(spend_id, STATUS_FAILED)

    @contextmanager
    def spending(
        self,
        dataset_id: str,
        epsilon: RationalLike,
        delta: RationalLike,
        mechanism: str,
        release_path: str | os.PathLike[str],
        **options: Any,
    ) -> Iterator[SpendRecord]:
        """``with ledger.spending(...) as rec:`` spends first, then marks released, or failed on any exception.

        ``options`` are :meth:`spend`'s keyword options (``unit``, ``config_total_epsilon``, ...).
        """
        rec = self.spend(dataset_id, epsilon, delta, mechanism, release_path, **options)
        try:
            yield rec
        except BaseException:
            self.mark_failed(rec.id)
            raise
        self.mark_released(rec.id)

    def releases(self, dataset_id: str) -> list[SpendRecord]:
        """Every spend recorded for the dataset, oldest first."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            return self._records(conn, ds)

    def spent(self, dataset_id: str) -> Budget:
        """What the dataset's counted spends compose to (failed releases included; see :meth:`summary`)."""
        return self.summary(dataset_id).spent

    def remaining(self, dataset_id: str) -> Budget | None:
        """total - spent, exactly (None without a configured total; negative parts if the total was lowered).

        For a total in (epsilon, delta): epsilon left at the total's delta, and the delta not yet spent by
        (epsilon, delta) releases. For a total in rho: rho left (its (epsilon, delta) fields are 0).
        """
        return self.summary(dataset_id).remaining

    def by_release_id(self, release_id: str) -> SpendRecord | None:
        """The spend that drew ``release_id`` (any dataset), or None."""
        if not isinstance(release_id, str) or not RELEASE_ID.match(release_id):
            return None
        with self._connect() as conn:
            if "release_id" not in self._columns(conn, "releases"):
                return None
            cols = self._select(conn, "releases", self._RELEASE_COLUMNS)
            row = conn.execute(f"SELECT {cols} FROM releases WHERE release_id = ?", (release_id,)).fetchone()
        return None if row is None else self._record(row)

    def summary(self, dataset_id: str) -> LedgerSummary:
        """Total, spent, remaining (in total and per principal) and every release of one dataset, in one snapshot."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            conn.execute("BEGIN")  # one read snapshot for the total and the rows
            try:
                ds = self._resolve(conn, ds)
                total = self._total(conn, ds)
                records = self._records(conn, ds)
                counted = self._counted(conn, ds)
                unit = self._unit(conn, ds)
                limits = self._limits(conn, ds)
                cap = self._query_limit(conn, ds)
                refresh = self._refresh(conn, ds)
                tables = tuple(sorted(t for t, d in self._table_map(conn).items() if d == ds))
            finally:
                conn.execute("COMMIT")
        got = spent([r.entry for r in counted], total)
        principals = []
        for who in sorted({r.principal for r in counted if r.principal is not None} | set(limits)):
            mine = spent([r.entry for r in counted if r.principal == who], limits.get(who, total))
            lim = limits.get(who)
            principals.append(PrincipalSummary(who, lim, mine.budget, _left(lim, mine), mine.rule,
                                               sum(1 for r in counted if r.principal == who)))
        if any(r.principal is None for r in counted) and principals:
            mine = spent([r.entry for r in counted if r.principal is None], total)
            principals.append(PrincipalSummary(None, None, mine.budget, None, mine.rule,
                                               sum(1 for r in counted if r.principal is None)))
        return LedgerSummary(ds, total, got.budget, _left(total, got), tuple(records), unit, got.rule,
                             tuple(principals), cap, refresh, window_start(refresh), tables)

    def datasets(self) -> list[str]:
        """Every dataset id with a total or a spend, sorted."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT dataset_id FROM budgets UNION SELECT dataset_id FROM releases ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]
