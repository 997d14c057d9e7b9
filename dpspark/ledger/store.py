"""The persistent privacy budget ledger (SQLite, stdlib ``sqlite3``).

One row per release attempt records the dataset id (a declared identity, not
a file path, so copying or renaming the data cannot reset its budget), the
exact epsilon and delta as rational strings, the mechanism name, the release
path, the creation time and a status. The budget is spent when the row is
written: callers must call :meth:`Ledger.spend` *before reading any data or
drawing any noise*, and a spend is never refunded. A release that then fails
is marked ``failed`` and still counts.

Composition is basic (sequential) composition, computed exactly:
spent epsilon = sum of epsilons, spent delta = sum of deltas, as Fractions.
A spend is allowed iff spent + requested <= total in both coordinates.

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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpspark.errors import ParameterError
from dpspark.exact import RationalLike, parse_rational
from dpspark.ledger.errors import (
    BudgetExceeded,
    BudgetNotConfigured,
    LedgerError,
    LedgerUnreadable,
    TotalMismatch,
    UnitMismatch,
)

SCHEMA_ID = "dpspark-budget-ledger/3"
#: schema 1 had no units table, schema 2 no pinned n; a writable open migrates them (pins nothing)
OLD_SCHEMA_IDS = ("dpspark-budget-ledger/1", "dpspark-budget-ledger/2")
ROW_UNIT = "row"
_UNITS_TABLE = """
CREATE TABLE IF NOT EXISTS units (
    dataset_id TEXT PRIMARY KEY,
    unit TEXT NOT NULL,
    pinned_at TEXT NOT NULL,
    max_units TEXT
)"""

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
    updated_at TEXT NOT NULL
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
    finished_at TEXT
);
CREATE INDEX releases_by_dataset ON releases (dataset_id, id);
""" + _UNITS_TABLE + ";\n"


@dataclass(frozen=True)
class Budget:
    """An exact (epsilon, delta) pair."""

    epsilon: Fraction
    delta: Fraction

    def __str__(self) -> str:
        return f"epsilon = {self.epsilon}, delta = {self.delta}"


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


@dataclass(frozen=True)
class LedgerSummary:
    """Everything ``dpspark budget`` shows for one dataset."""

    dataset_id: str
    total: Budget | None
    spent: Budget
    remaining: Budget | None  # None when no total is configured; may be negative if the total was lowered
    releases: tuple[SpendRecord, ...]
    unit: str | None = None  # the pinned privacy unit ("row" or "column:NAME"); None before the first spend


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
                conn.execute(_UNITS_TABLE)
                columns = {r[1] for r in conn.execute("PRAGMA table_info(units)")}
                if "max_units" not in columns:  # schema 2: the pinned n arrived with schema 3
                    conn.execute("ALTER TABLE units ADD COLUMN max_units TEXT")
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_ID,))
            row = (SCHEMA_ID,)
        if row is None or row[0] not in (SCHEMA_ID, *OLD_SCHEMA_IDS):
            raise LedgerUnreadable(
                f"budget ledger {self.path} has schema {row[0] if row else None!r}, expected {SCHEMA_ID!r}"
            )

    @staticmethod
    def _tables(conn: sqlite3.Connection) -> set[str]:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    # -- parsing stored rows ------------------------------------------------

    def _stored_fraction(self, text: Any, what: str) -> Fraction:
        if not isinstance(text, str):
            raise LedgerUnreadable(f"budget ledger {self.path} holds a malformed {what} (not text)")
        try:
            value = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise LedgerUnreadable(f"budget ledger {self.path} holds a malformed {what}: {text!r}") from None
        if value < 0:
            raise LedgerUnreadable(f"budget ledger {self.path} holds a negative {what}: {text!r}")
        return value

    def _record(self, row: tuple[Any, ...]) -> SpendRecord:
        rid, ds, eps, delta, mech, path, created, status, finished = row
        if status not in STATUSES:
            raise LedgerUnreadable(f"budget ledger {self.path} holds an unknown status {status!r} (row {rid})")
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
        )

    def _total(self, conn: sqlite3.Connection, dataset_id: str) -> Budget | None:
        row = conn.execute(
            "SELECT epsilon_total, delta_total FROM budgets WHERE dataset_id = ?", (dataset_id,)
        ).fetchone()
        if row is None:
            return None
        return Budget(
            self._stored_fraction(row[0], f"total epsilon of {dataset_id!r}"),
            self._stored_fraction(row[1], f"total delta of {dataset_id!r}"),
        )

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

    def _records(self, conn: sqlite3.Connection, dataset_id: str) -> list[SpendRecord]:
        rows = conn.execute(
            "SELECT id, dataset_id, epsilon, delta, mechanism, release_path, created_at, status, finished_at "
            "FROM releases WHERE dataset_id = ? ORDER BY id",
            (dataset_id,),
        ).fetchall()
        return [self._record(r) for r in rows]

    @staticmethod
    def _compose(records: list[SpendRecord]) -> Budget:
        """Basic composition: exact sums of epsilon and of delta over every spend, failed ones included."""
        return Budget(sum((r.epsilon for r in records), Fraction(0)), sum((r.delta for r in records), Fraction(0)))

    # -- public API --------------------------------------------------------------

    def set_total(
        self,
        dataset_id: str,
        epsilon_total: RationalLike,
        delta_total: RationalLike = 0,
        *,
        allow_increase: bool = False,
    ) -> Budget:
        """Set or change the dataset's total budget (exact): the operator's explicit act.

        Raising an existing total needs ``allow_increase``; lowering is allowed
        (even below what is spent: ``remaining`` then goes negative and every
        spend is refused). Setting the same total again is a no-op. A release
        config's totals never come here: :meth:`spend` checks them
        (``config_total_epsilon``/``config_total_delta``). Returns the total now in force.
        """
        ds = check_dataset_id(dataset_id)
        eps = _amount(epsilon_total, "epsilon_total")
        delta = _amount(delta_total, "delta_total", below_one=True)
        with self._connect() as conn, self._write(conn):
            old = self._total(conn, ds)
            if old is not None and (eps > old.epsilon or delta > old.delta) and not allow_increase:
                raise LedgerError(
                    f"dataset {ds!r} already has a total budget of {old} in {self.path}; raising it to "
                    f"epsilon = {eps}, delta = {delta} is an explicit operator decision: run "
                    f"`dpspark budget {ds} --total {eps} --delta-total {delta} --allow-increase` "
                    "(Python: Ledger.set_total(..., allow_increase=True))"
                )
            conn.execute(
                "INSERT INTO budgets (dataset_id, epsilon_total, delta_total, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (dataset_id) DO UPDATE SET epsilon_total = excluded.epsilon_total, "
                "delta_total = excluded.delta_total, updated_at = excluded.updated_at",
                (ds, str(eps), str(delta), _now()),
            )
        return Budget(eps, delta)

    def total(self, dataset_id: str) -> Budget | None:
        """The configured total budget of a dataset, or None."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            return self._total(conn, ds)

    def _check(
        self,
        conn: sqlite3.Connection,
        ds: str,
        eps: Fraction,
        delta: Fraction,
        unit: str,
        config_total: tuple[Fraction | None, Fraction | None],
        max_units: int | None = None,
    ) -> tuple[Budget | None, bool]:
        """Every refusal of a spend, in one read: (total to insert if the config sets it, unit to pin?).

        Raises :class:`TotalMismatch`, :class:`BudgetNotConfigured`,
        :class:`UnitMismatch` or :class:`BudgetExceeded`; writes nothing.
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
        pinned_n = self._pinned_n(conn, ds)
        if pinned_n is not None and max_units is not None and pinned_n != max_units:
            raise UnitMismatch(
                f"dataset {ds!r} is pinned to n = {pinned_n} units at most (max_units) since its first spend, but this "
                f"release declares max_units = {max_units}. Every spend's statement is under add/remove among at "
                "most n units, and they add up to a valid total only under the same n; release with the pinned "
                "max_units. Nothing was spent."
            )
        spent = self._compose(self._records(conn, ds))
        left = Budget(total.epsilon - spent.epsilon, total.delta - spent.delta)
        if eps > left.epsilon or delta > left.delta:
            raise BudgetExceeded(
                ds,
                (eps, delta),
                (max(left.epsilon, Fraction(0)), max(left.delta, Fraction(0))),
                (total.epsilon, total.delta),
            )
        return new_total, pinned is None

    def _spend_args(
        self,
        dataset_id: str,
        epsilon: RationalLike,
        delta: RationalLike,
        unit: str | None,
        config_total_epsilon: RationalLike | None,
        config_total_delta: RationalLike | None,
    ) -> tuple[str, Fraction, Fraction, str, tuple[Fraction | None, Fraction | None]]:
        ds = check_dataset_id(dataset_id)
        eps = _amount(epsilon, "epsilon")
        delta_v = _amount(delta, "delta", below_one=True)
        cfg_eps = None if config_total_epsilon is None else _amount(config_total_epsilon, "total_epsilon")
        cfg_delta = None if config_total_delta is None else _amount(config_total_delta, "total_delta", below_one=True)
        return ds, eps, delta_v, unit_key(unit), (cfg_eps, cfg_delta)

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
    ) -> None:
        """Raise what :meth:`spend` would raise now, writing nothing (a preflight for ``--dry-run``).

        A later :meth:`spend` still checks again inside its transaction: another
        process may spend in between.
        """
        args = self._spend_args(dataset_id, epsilon, delta, unit, config_total_epsilon, config_total_delta)
        ds, eps, delta_v, ukey, cfg = args
        with self._connect() as conn:
            conn.execute("BEGIN")  # one read snapshot
            try:
                self._check(conn, ds, eps, delta_v, ukey, cfg, max_units)
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
    ) -> SpendRecord:
        """Commit a spend of (epsilon, delta) on ``dataset_id``, or raise and record nothing.

        Call it before any data is read or any noise is drawn. The checks and the
        insert are one ``BEGIN IMMEDIATE`` transaction, so concurrent spenders are
        serialised. ``epsilon`` must be an exact rational upper bound on the
        release's privacy loss (e.g. the requested epsilon). ``unit`` is the
        release's unit column (None: row level); the first spend pins it and a
        later spend under another unit raises :class:`UnitMismatch`; ``max_units``
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
        ds, eps, delta_v, ukey, cfg = self._spend_args(
            dataset_id, epsilon, delta, unit, config_total_epsilon, config_total_delta
        )
        path = os.fspath(release_path)
        created = _now()
        with self._connect() as conn, self._write(conn):
            new_total, pin = self._check(conn, ds, eps, delta_v, ukey, cfg, max_units)
            if new_total is not None:
                conn.execute(
                    "INSERT INTO budgets (dataset_id, epsilon_total, delta_total, updated_at) VALUES (?, ?, ?, ?)",
                    (ds, str(new_total.epsilon), str(new_total.delta), created),
                )
            n_text = None if max_units is None else str(int(max_units))
            if pin:
                conn.execute("INSERT INTO units (dataset_id, unit, pinned_at, max_units) VALUES (?, ?, ?, ?)",
                             (ds, ukey, created, n_text))
            elif n_text is not None and self._pinned_n(conn, ds) is None:
                conn.execute("UPDATE units SET max_units = ? WHERE dataset_id = ?", (n_text, ds))
            cur = conn.execute(
                "INSERT INTO releases (dataset_id, epsilon, delta, mechanism, release_path, created_at, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (ds, str(eps), str(delta_v), mechanism, path, created, STATUS_SPENT),
            )
            rid = cur.lastrowid
        assert rid is not None
        return SpendRecord(rid, ds, eps, delta_v, mechanism, path, created, STATUS_SPENT, None)

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
        """Exact basic composition of every spend on the dataset (failed releases included)."""
        return self._compose(self.releases(dataset_id))

    def remaining(self, dataset_id: str) -> Budget | None:
        """total - spent, exactly (None without a configured total; negative parts if the total was lowered)."""
        summary = self.summary(dataset_id)
        return summary.remaining

    def summary(self, dataset_id: str) -> LedgerSummary:
        """Total, spent, remaining and every release of one dataset, read in one snapshot."""
        ds = check_dataset_id(dataset_id)
        with self._connect() as conn:
            conn.execute("BEGIN")  # one read snapshot for the total and the rows
            try:
                total = self._total(conn, ds)
                records = self._records(conn, ds)
                unit = self._unit(conn, ds)
            finally:
                conn.execute("COMMIT")
        spent = self._compose(records)
        remaining = None if total is None else Budget(total.epsilon - spent.epsilon, total.delta - spent.delta)
        return LedgerSummary(ds, total, spent, remaining, tuple(records), unit)

    def datasets(self) -> list[str]:
        """Every dataset id with a total or a spend, sorted."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT dataset_id FROM budgets UNION SELECT dataset_id FROM releases ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]
