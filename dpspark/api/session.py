"""The Python API: releases from a DataFrame, a table or a path, against one exactly composed budget.

>>> import dpspark                                                             # doctest: +SKIP
>>> with dpspark.Session(df, max_units=50_000, unit_column="user_id",
...                      budget={"epsilon": "2", "delta": "1e-8"}) as s:       # doctest: +SKIP
...     h = s.histogram(keys=["city"], universe={"kind": "string", "max_bytes": 15},
...                     mechanism="stability", epsilon="1", delta="1e-9", output="releases/city")
...     h.to_pandas()          # key columns, noisy_count, error bars
...     s.remaining            # budget left, as numbers (.measure: the exact one)

Every keyword is the TOML config's field of the same name, so both interfaces share one validator
(:func:`dpspark.api.config.parse_config`). ``epsilon`` and ``delta`` are the release's total: with
``max_keys_per_unit = k`` each bin gets epsilon/k (and delta/k). A release is refused before any data is
read when the session budget (or the ledger) cannot pay for it; the spend is never refunded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

from dpspark.api.charge import Charge, SessionBudgetExceeded
from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from dpspark.api.config import ReleaseSpec
    from dpspark.rng import RandomSource

__all__ = ["Session", "SessionBudgetExceeded", "SessionInputError"]


class SessionInputError(DPSparkError, ValueError):
    """The session's input cannot be used (the message quotes no data value)."""


class Session:
    """A privacy session over one dataset (see the module docstring).

    ``data``: a Spark DataFrame (its SparkSession is reused; the release runs on Spark), a pandas
    DataFrame, a pyarrow Table, or a local Parquet/CSV/ORC/JSON path (these run on the Arrow engine, no
    JVM, unless ``spark=`` is given). ``budget``: ``{"epsilon": ..., "delta": ...}``
    as exact strings, the session's total under add/remove of one unit among at most ``max_units``;
    None for no session budget. ``max_units`` (n, public) may be left out when the session runs only groups and
    answers (:meth:`groups`, :meth:`answers`, :meth:`sql`): their guarantee needs no n, so they run at the fixed
    cap :data:`dpspark.privacy.relations.UNITS_CAP` (stated as "no limit on the number of units"); a release
    of a family calibrated on n (histograms, samplers, learners) is then refused before anything is spent.
    ``ledger``/``dataset``: charge a persistent ledger too; ``total``
    (``{"epsilon": ..., "delta": ...}`` or ``{"rho": ...}``) names the dataset's total like a config's
    [budget] totals: set when the ledger has none, else it must equal it (checked here, before anything runs).
    ``principal``: the analyst each ledger spend is charged to (else $DPSPARK_PRINCIPAL).
    ``show_data_errors``: a failed data pass shows its original error instead of the fixed, value-free
    one (for a curator who owns the data only: the details can quote rows). A release without ``output=`` is
    written to a scratch folder removed when the Python process exits (:mod:`dpspark.api.scratch`);
    ``keep_releases`` keeps those folders. ``curator_checks``: releases may use the data-dependent
    checks ``out_of_universe="error"`` and ``on_excess_units="refuse"`` (for the curator only: their outcome
    is an exact answer about the data; see :mod:`dpspark.api.curator`); off, a call that asks for one is
    refused before anything is read or charged. ``public_files``: the files a release may read (key
    lists, universe value files), which the curator vouches are public; any other file named by a call is
    refused. The privacy unit (``unit_column``) and ``max_units`` are the Session's: a release cannot change
    them.
    ``tables``/``public_tables``: named tables for :meth:`sql` (the tables not listed public are private; the
    first of them is the session's data, and the others share its unit (``unit_column``, required then) and join
    it on the unit; positional ``data`` is named ``data`` there; with ``spark=``, a name that is not a local path
    is a catalog table). The private tables are one dataset: with ``ledger=`` and no ``dataset=``, the dataset is
    their names, sorted, joined by '+' (``orders+users``), and each release is charged to it once.
    """

    def __init__(
        self,
        data: Any = None,
        *,
        max_units: int | None = None,
        unit_column: str | None = None,
        budget: Mapping[str, Any] | None = None,
        ledger: str | os.PathLike[str] | None = None,
        dataset: str | None = None,
        total: Mapping[str, Any] | None = None,
        principal: str | None = None,
        spark: "SparkSession | None" = None,
        rng: "RandomSource | None" = None,
        progress: Any = None,
        show_data_errors: bool = False,
        keep_releases: bool = False,
        curator_checks: bool = False,
        public_files: "Sequence[str | os.PathLike[str]]" = (),
        tables: Mapping[str, Any] | None = None,
        public_tables: Collection[str] = (),
    ) -> None:
        from dpspark.api.session_sql import SessionTables
        from dpspark.privacy import AddRemove, Budget

        if not isinstance(curator_checks, bool):
            raise SessionInputError("curator_checks must be True or False")
        if curator_checks:
            import warnings

            from dpspark.api.curator import CURATOR_CHECKS_WARNING

            warnings.warn(CURATOR_CHECKS_WARNING, UserWarning, stacklevel=2)
        self.tables = SessionTables.of(data, tables, public_tables, spark)
        if len(self.tables.private_names) > 1 and not unit_column:
            raise SessionInputError(f"the private tables {', '.join(map(repr, self.tables.private_names))} share a "
                                    "privacy unit: name it, unit_column=... (each private table has that column); or "
                                    "mark the tables that are not private public_tables=[...]")
        if ledger is not None and dataset is None and tables:  # one dataset: the private tables sharing the unit
            from dpspark.api.session_sql import dataset_name

            dataset = dataset_name(self.tables.private_names)
        if (ledger is None) != (dataset is None):
            raise SessionBudgetExceeded("ledger and dataset go together: name both, or neither")
        if dataset is not None:  # a table is in one dataset, with the tables sharing its unit (before any spend)
            from dpspark.api.session_sql import check_dataset_covers, check_ledger_dataset

            check_dataset_covers(dataset, self.tables.private_names)
            check_ledger_dataset(Path(ledger).resolve(), dataset, self.tables.private_names)  # type: ignore[arg-type]
        self.max_units = max_units
        self.unit_column = unit_column
        self.ledger = None if ledger is None else Path(ledger).resolve()
        self.dataset = dataset
        self.principal = principal
        if total is not None:  # the curator's named total, like a config's: set if missing, else must match
            from dpspark.ledger import Ledger
            from dpspark.ledger.store import total_from

            if self.ledger is None:
                raise SessionBudgetExceeded("total= names the ledger's total: give ledger= and dataset= too")
            Ledger(self.ledger).declare_total(dataset, total_from(total))  # type: ignore[arg-type]
        self.rng = rng
        self.progress = progress if progress is not None else (lambda _m: None)
        #: the curator opts in to the original text of a failed data pass (it can quote rows; see dpspark.engine.data_pass)
        self.show_data_errors = show_data_errors
        #: releases without ``output=`` outlive the process (else they are removed at exit: dpspark.api.scratch)
        self.keep_releases = keep_releases
        #: the curator enabled the data-dependent checks for this Session's releases (dpspark.api.curator)
        self.curator_checks = curator_checks
        #: the files an analyst's release may read (key lists, universe value files): the curator's list
        self.public_files = frozenset(os.path.realpath(os.fspath(f)) for f in public_files)
        #: the private table's SQL name and the public tables (:meth:`sql`); the private one is the session's data
        self._data = _as_table(self.tables.data)
        #: the other private tables (pandas as Arrow, like the data): they join the data on the unit
        self._others = {n: _as_table(t) for n, t in self.tables.others.items()}
        self._spark = spark
        self._own_spark = False
        self._df: "DataFrame | None" = None
        from dpspark.privacy.relations import UNITS_CAP

        #: n as the releases state it: the declared max_units, or the fixed cap (groups and answers only)
        self.units_bound = UNITS_CAP if max_units is None else max_units
        self.budget = None if budget is None else Budget(dict(budget), AddRemove(self.units_bound))
        self.releases: list[Path] = []

    # --- context manager ---------------------------------------------------------------------
    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the Spark session if this Session started it (a reused one is left running)."""
        if self._own_spark and self._spark is not None:
            self._spark.stop()
        self._spark = None
        self._df = None

    # --- budget ------------------------------------------------------------------------------
    @property
    def remaining(self) -> Any:
        """The budget left, printed as numbers (``eps = 1, delta = 9e-9``), or None without a session budget.

        A :class:`~dpspark.api.session_view.BudgetLeft`: its ``.measure`` is the exact :mod:`dpspark.privacy`
        measure, and ``.epsilon``, ``.delta``, ``.rho`` and ``==`` read it.
        """
        from dpspark.api.session_view import BudgetLeft

        return None if self.budget is None else BudgetLeft(self.budget.remaining)

    def __repr__(self) -> str:
        from dpspark.api.session_view import session_repr

        return session_repr(self)

    def _repr_html_(self) -> str:
        """The session in a notebook: the budget spent and left as numbers, and the releases made."""
        from dpspark.api.session_view import session_html

        return session_html(self)

    def charge_for(self, spec: "ReleaseSpec") -> Charge:
        """The budget charge of ``spec``: this session's budget (if any) and the spec's ledger (if any)."""
        return Charge.for_spec(spec, self.budget, self.principal)

    # --- data (what a release or an adaptive answer reads; metadata until its data pass) ---------
    def arrow_source(self) -> Any:
        """pandas, Arrow and local-file inputs run on the Arrow engine (no JVM) unless a SparkSession was given."""
        data = self._data
        if self._spark is not None or (hasattr(data, "sparkSession") and hasattr(data, "schema")):
            return None
        import pyarrow as pa

        if isinstance(data, pa.Table):
            return data
        if isinstance(data, (str, os.PathLike)):
            from dpspark.engine.arrow.backend import is_local_path

            return str(Path(data).resolve()) if is_local_path(str(data)) else None
        return None

    def text_input(self) -> bool:
        """True when the input is a CSV/JSON path: its column types come from the data, not from metadata."""
        if isinstance(self._data, (str, os.PathLike)):
            from dpspark.engine.runner import is_text_format

            return is_text_format(None, str(self._data))
        return False

    def frame(self) -> "DataFrame":
        """The input as a Spark DataFrame (created once; a Spark DataFrame is used as it is)."""
        if self._df is not None:
            return self._df
        data = self._data
        if hasattr(data, "sparkSession") and hasattr(data, "schema"):
            self._spark = data.sparkSession
            self._df = data
            return data
        spark = self._spark_session()
        if isinstance(data, (str, os.PathLike)):
            from dpspark.api.config import InputSpec
            from dpspark.engine.spark.counts import read_input

            path = str(Path(data).resolve())
            fmt = {"pq": "parquet", "jsonl": "json"}.get(Path(path).suffix.lstrip(".").lower(),
                                                       Path(path).suffix.lstrip(".").lower() or "parquet")
            self._df = read_input(spark, InputSpec(path, None, fmt))
        else:
            import pyarrow as pa

            self._df = spark.createDataFrame(data)
        return self._df

    def _spark_session(self) -> "SparkSession":
        if self._spark is None:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is not None:
                self._spark = active
            else:
                from dpspark.engine.spark.local import local_session

                self._spark = local_session("dpspark-session", "local[*]")
                self._own_spark = True
        return self._spark

    # --- releases ----------------------------------------------------------------------------
    def spec(self, *, mechanism: str, epsilon: Any, keys: list[str] | str | None = None,
             universe: Mapping[str, Any] | None = None, output: str | os.PathLike[str] | None = None,
             sections: Mapping[str, Any] | None = None, certify: bool = True, **privacy: Any) -> "ReleaseSpec":
        """The validated :class:`~dpspark.api.config.ReleaseSpec` a :meth:`release` call would run.

        ``certify`` False leaves the mechanism's certification to the release's plan (built once there).
        """
        from dpspark.api.config import PYTHON_SOURCE, parse_config

        if output is not None:
            out = Path(output)
        else:  # a scratch folder removed when the process exits (unless keep_releases): no pile-up in the temp dir
            from dpspark.api.scratch import scratch_output

            out = scratch_output(keep=self.keep_releases)
        self._check_units(mechanism)
        priv = {"mechanism": mechanism, "epsilon": epsilon,
                **({"max_units": self.max_units} if self.max_units is not None else {}),
                **({"unit_column": self.unit_column} if self.unit_column else {}),
                **{k: v for k, v in privacy.items() if v is not None}}
        raw: dict[str, Any] = {"privacy": priv, "output": {"path": str(out.resolve())}}
        if keys is not None:
            raw["keys"] = {"columns": [keys] if isinstance(keys, str) else list(keys)}
        if universe is not None:
            raw["universe"] = dict(universe)
        for name, value in (sections or {}).items():
            if name == "input":  # else the plan would check (and name the columns of) a file the session never reads
                raise SessionInputError("sections cannot hold [input]: a Session's input is the data it was built "
                                        "with; nothing was read and nothing was spent")
            raw[name] = value
        if self.ledger is not None:
            raw["budget"] = {"ledger": str(self.ledger), "dataset": self.dataset}
        from dpspark.api.curator import check_analyst_files, check_analyst_spec, check_analyst_unit

        check_analyst_files(raw, public_files=self.public_files)  # before the parse opens any file
        spec = parse_config(raw, Path(".") / PYTHON_SOURCE, input_given=True, certify=certify)
        check_analyst_spec(spec, curator_checks=self.curator_checks)  # before any charge, check or read
        check_analyst_unit(spec, unit_column=self.unit_column, max_units=self.units_bound)
        return spec

    def _check_units(self, mechanism: str) -> None:
        """Refuse, before anything is read or spent, a family calibrated on n in a Session without max_units."""
        if self.max_units is not None:
            return
        from dpspark.mechanisms.registry import UnknownMechanismError, mechanism_class

        try:
            cls = mechanism_class(mechanism)
        except UnknownMechanismError:
            return  # the spec's parse names the choices
        if not cls.units_optional:
            raise SessionInputError(
                f"mechanism {mechanism!r} needs max_units (n, the public bound on the number of units): its noise, "
                "ranges or estimates are calibrated on n, and this Session declares none (only groups and the "
                "answers run without it); build the Session with Session(..., max_units=...); nothing was read and "
                "nothing was spent")

    def release(self, *, mechanism: str, epsilon: Any, output: str | os.PathLike[str] | None = None,
                sections: Mapping[str, Any] | None = None, keys: list[str] | str | None = None,
                universe: Mapping[str, Any] | None = None, explain: bool = False, **privacy: Any) -> Any:
        """Run one release of any registered mechanism and open it.

        ``sections`` holds the mechanism's own config sections (e.g. ``{"queries": [...]}``); ``keys``
        and ``universe`` are for keyed mechanisms; every ``[privacy]`` field is a keyword. The session
        budget is charged the configured (epsilon, delta) before any data is read (never refunded).
        ``explain``: return the plan's text (passes, budget split, noise, error bars); nothing is read or spent.
        """
        from dpspark.engine.runner import plan_release, run_release
        from dpspark.lookup import open_release

        spec = self.spec(keys=keys, universe=universe, mechanism=mechanism, epsilon=epsilon, output=output,
                         sections=sections, certify=False, **privacy)
        charge = self.charge_for(spec)
        if not explain:  # the session budget before the plan, whose calibration can take a while: a refusal is quick
            if self.ledger is not None:  # another session may have charged one of the tables under another dataset
                from dpspark.api.session_sql import check_ledger_dataset

                check_ledger_dataset(self.ledger, self.dataset, self.tables.private_names)  # type: ignore[arg-type]
            charge.check()
        arrow = self.arrow_source()  # pandas, Arrow and local files: the Arrow engine when the mechanism runs there
        plan = plan_release(spec, have_spark=arrow is None, given_table=arrow is not None)  # the one construction
        if explain:
            return plan.text
        charge.check(plan)  # the session budget and the ledger's exact charge: nothing is read or spent when refused
        plan.check(create_parent=True)  # the output path and the ledger
        if plan.engine != "arrow":  # Spark-only mechanisms get a Spark DataFrame
            arrow = None
        df = None if arrow is not None else self.frame()
        # run_release checks the schema (metadata), then charges the session budget and the ledger together
        out = run_release(plan, data=df, rng=self.rng, progress=self.progress, arrow_source=arrow,
                          text_input=self.text_input(), charge=charge, show_data_errors=self.show_data_errors)
        self.releases.append(out)
        return open_release(out)

    def sql(self, query: str, *, output: str | os.PathLike[str] | None = None, explain: bool = False) -> Any:
        """Run a ``SELECT WITH DIFFERENTIAL_PRIVACY`` query (docs/sql.md) as the ``groups`` (or answers) call it
        compiles to, and open the release; ``explain``: the plan's text, nothing read or spent."""
        from dpspark.api.session_sql import run_sql

        return run_sql(self, query, output=output, explain=explain)

    def answers(self, *, k: int, mechanism: str = "bounded_noise", epsilon: Any, delta: Any, **privacy: Any) -> Any:
        """Declare k adaptive scalar answers up front (charged once now); ``.answer(query)`` answers one at a time.

        See :mod:`dpspark.api.session_answers` (a noisy-count mean uses two of the k).
        """
        from dpspark.api.session_answers import AdaptiveAnswers  # it sees this session through a small protocol

        self._answers = AdaptiveAnswers(self, k=k, mechanism=mechanism, epsilon=epsilon, delta=delta, **privacy)
        return self._answers

    def answer(self, query: Mapping[str, Any]) -> Any:
        """Answer one query with the answers object declared by the last :meth:`answers` call."""
        if getattr(self, "_answers", None) is None:
            raise SessionBudgetExceeded("declare the queries first: session.answers(k=..., mechanism=..., ...)")
        return self._answers.answer(query)

    def histogram(self, *, keys: list[str] | str, universe: Mapping[str, Any], mechanism: str, epsilon: Any,
                  output: str | os.PathLike[str] | None = None, **privacy: Any) -> Any:
        """Run one histogram release and open it (``.to_pandas()``, ``.count(key)``, ``.estimate(key)``).

        Every ``[privacy]`` field is a keyword: ``delta``, ``beta``, ``max_keys_per_unit``,
        ``max_rows_per_key``, ``on_excess_units``, ``out_of_universe``, ``pad_seconds`` and the
        mechanism's own options (``gamma``, ``m``, ``sampler``). ``on_excess_units="refuse"`` and
        ``out_of_universe="error"`` are curator-side checks: refused unless the Session was built with
        ``curator_checks=True`` (:mod:`dpspark.api.curator`).
        """
        return self.release(mechanism=mechanism, epsilon=epsilon, output=output, keys=keys, universe=universe,
                            **privacy)

    def groups(self, *, by: list[str] | str, aggregates: list[Mapping[str, Any]], epsilon: Any, keys: Any = None,
               universe: Mapping[str, Any] | None = None, delta: Any = None,
               output: str | os.PathLike[str] | None = None, max_groups_per_unit: int | str | None = None,
               max_rows_per_group: int | str | None = None, noise: str | None = None, beta: Any = None,
               keys_file: str | os.PathLike[str] | None = None, where: str | None = None,
               join: Mapping[str, Any] | None = None, bounds_share: Any = None, selection: str | None = None,
               **privacy: Any) -> Any:
        """Aggregates per group (mechanism ``groups``), opened: ``.to_pandas()``, ``.lookup(key)``.

        ``keys``: the public key rows (a list of values, of tuples for several ``by`` columns, or a pandas/Arrow
        table whose columns include ``by``); None with a ``universe`` selects the keys privately.
        ``where``: a row filter in the filter grammar (``[groups] filter``; :mod:`dpspark.engine.predicate`).
        ``join``: a public join, ``{"table": <pandas/Arrow table> or "path": ..., "on": [...], "how": "inner"}``.
        ``max_groups_per_unit`` / ``max_rows_per_group``: an int, or ``"auto"`` (chosen privately with a stated
        share of epsilon, docs/groups.md §I).
        ``aggregates``: the ``[[aggregates]]`` dicts (one without ``lo``/``hi`` has them chosen privately on
        ``bounds_share`` of epsilon, default 1/10: docs/groups.md §J). The other keywords are the ``[groups]`` fields; every
        ``[privacy]`` field is a keyword too. Charged once (epsilon, delta) before any data is read, like
        :meth:`release`: the budget is spent once per aggregate, never per group.
        """
        by_cols = [by] if isinstance(by, str) else list(by)
        section: dict[str, Any] = {"by": by_cols}
        if keys is not None:
            section["keys"] = _key_rows(keys, by_cols)
        if keys_file is not None:
            section["keys_file"] = str(Path(keys_file).resolve())
        if join is not None and isinstance(join, Mapping) and join.get("private", False) is not False:
            join = self._private_join(join)
        for name, value in (("max_groups_per_unit", max_groups_per_unit), ("max_rows_per_group", max_rows_per_group),
                            ("noise", noise), ("beta", beta), ("filter", where), ("join", join),
                            ("bounds_share", bounds_share), ("selection", selection)):
            if value is not None:
                section[name] = value
        sections: dict[str, Any] = {"groups": section, "aggregates": [dict(a) for a in aggregates]}
        if universe is not None:
            sections["universe"] = dict(universe)
        return self.release(mechanism="groups", epsilon=epsilon, delta=delta, output=output, sections=sections,
                            **privacy)

    def _private_join(self, join: Mapping[str, Any]) -> dict[str, Any]:
        """A private join names another private table of this session (they share the unit): its data."""
        name = join.get("table")
        if "path" in join or not isinstance(name, str) or name not in self._others:
            others = ", ".join(map(repr, self._others)) or "none"
            raise SessionInputError(f"a private join names another private table of the session, table = \"<name>\" "
                                    f"(the session's other private tables: {others}); nothing was read or spent")
        table = self._others[name]
        if isinstance(table, (str, os.PathLike)):
            table = str(Path(table).resolve())
        if hasattr(table, "sparkSession") and self.arrow_source() is not None:
            raise SessionInputError(f"{name!r} is a Spark DataFrame but {self.tables.private!r} runs on the Arrow "
                                    "engine: give both as Spark DataFrames (or pass spark=); nothing was read or spent")
        return {**join, "table": table, "name": name}


def _key_rows(keys: Any, by: list[str]) -> list[Any]:
    """Public key rows from a list, or from a pandas/Arrow table's ``by`` columns (public values, not data)."""
    import pyarrow as pa

    if hasattr(keys, "columns") and hasattr(keys, "dtypes"):  # pandas: through Arrow, so numbers become ints
        keys = pa.Table.from_pandas(keys, preserve_index=False)
    if isinstance(keys, pa.Table):
        missing = [c for c in by if c not in keys.column_names]
        if missing:
            raise SessionInputError(f"the keys table has no column(s) {', '.join(map(repr, missing))}")
        cols = [keys.column(c).to_pylist() for c in by]
        return [r[0] if len(by) == 1 else list(r) for r in zip(*cols)]
    return list(keys)


def _as_table(data: Any) -> Any:
    """A pandas DataFrame becomes a pyarrow Table once, when the session opens (other inputs stay as given).

    The conversion reads every value, so it runs here, by the curator who opens the session, and not in a
    release or an answer; a value pyarrow cannot convert fails it with a fixed text that quotes no value.
    """
    if hasattr(data, "sparkSession") or not (hasattr(data, "columns") and hasattr(data, "dtypes")):
        return data
    import pyarrow as pa

    failed = False
    try:
        return pa.Table.from_pandas(data, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError):
        failed = True
    if failed:  # outside the except block: no chained original, which quotes the value
        raise SessionInputError("the pandas DataFrame cannot be converted to an Arrow table: some column mixes "
                                "types Arrow cannot hold in one column (details withheld: they quote values); "
                                "give such a column one dtype, e.g. df[col] = pd.to_numeric(df[col], errors='coerce')")
    raise AssertionError("unreachable")
