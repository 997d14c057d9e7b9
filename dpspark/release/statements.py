"""The general statements of every release that is not a keyed histogram (answers, samples, distributions).

Histogram kinds state e^eps~ = p/q plus a bias and error bars on counts (:mod:`dpspark.release.counts_form`).
Answers, samples and learned distributions state other things: a rational or zCDP guarantee, a
deterministic bound, a total-variation claim. Their manifests carry the general vocabulary of
:mod:`dpspark.privacy` instead (``"envelope": "statement"``):

* ``privacy.statements``: named :class:`~dpspark.privacy.PrivacyStatement` values in their exact
  ``describe()`` form (``add_remove``, ``replacement`` and, for zCDP, the certified (eps, delta)
  conversions at the configured delta), each with its text;
* ``accuracy``: an :class:`~dpspark.privacy.AccuracyStatement` (deterministic, TV or general claims);
* ``section``: the kind's own JSON content (answers, samples, a distribution), exact, checked by the
  kind's codec (:mod:`dpspark.release.kinds`);
* ``files``: sha256 and size of each data table (``<name>.parquet``).

The header, files, seal and limits are the one envelope's (:mod:`dpspark.release.manifest`). A mechanism
returns a :class:`StatementRelease` from ``run()``; :func:`write_statement_release` writes it (the kind
registry binds ``kind``). Nothing here depends on the data except the DP outputs in ``section`` and the tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from dpspark.privacy.accuracy import AccuracyStatement
from dpspark.privacy.errors import DescriptionError, PrivacyError
from dpspark.privacy.measures import ZCDP
from dpspark.privacy.relations import AddRemove, Substitute
from dpspark.privacy.statement import PrivacyStatement
from dpspark.release.header import FileEntry, ManifestHeader, ReadLimits, fail, json_safe, manifest_header

if TYPE_CHECKING:
    import pyarrow as pa

    from dpspark.universe import Universe

#: the value of the manifest's ``envelope`` field that selects these statements
ENVELOPE = "statement"
#: a table name is a plain file stem
_TABLE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class StatementRelease:
    """What a non-histogram mechanism's ``run()`` returns; :func:`write_statement_release` stores it."""

    algorithm: str
    parameters: Mapping[str, Any]
    privacy: tuple[tuple[str, PrivacyStatement], ...]
    accuracy: AccuracyStatement
    section: Mapping[str, Any]
    tables: Mapping[str, "pa.Table"] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [n for n, _ in self.privacy]
        if "add_remove" not in names and "replacement" not in names:
            raise PrivacyError("a release states its privacy under add/remove or replacement (or both)")
        if len(set(names)) != len(names):
            raise PrivacyError("privacy statement names must be distinct")
        if not all(isinstance(s, PrivacyStatement) for _, s in self.privacy):
            raise TypeError("privacy holds (name, PrivacyStatement) pairs")
        if not isinstance(self.accuracy, AccuracyStatement):
            raise TypeError("accuracy must be an AccuracyStatement")
        for name in self.tables:
            if not name or not set(name) <= _TABLE_NAME_CHARS:
                raise ValueError(f"table name {name!r}: use lower-case letters, digits, '_' and '-'")


def standard_statements(
    primary: PrivacyStatement,
    *,
    delta: Any = None,
    replacement: Optional[PrivacyStatement] = None,
    add_remove: Optional[PrivacyStatement] = None,
) -> tuple[tuple[str, PrivacyStatement], ...]:
    """The usual named statements of a release: add/remove, replacement and, for zCDP, their (eps, delta).

    ``primary`` holds under AddRemove(n) or Substitute(n). The add/remove statement is ``primary`` (or
    ``add_remove=``); the replacement one is ``replacement=`` or, failing that, ``primary`` under
    Substitute(n) by group privacy. With ``delta``, each zCDP statement gets a certified (eps, delta)
    conversion (CKS20 Cor. 13) named ``<name>_approx_dp``.
    """
    rel = primary.relation
    if not isinstance(rel, (AddRemove, Substitute)):
        raise PrivacyError("the primary statement must hold under AddRemove(n) or Substitute(n)")
    out: list[tuple[str, PrivacyStatement]] = []
    ar = primary if isinstance(rel, AddRemove) else add_remove
    if ar is not None:
        if not isinstance(ar.relation, AddRemove):
            raise PrivacyError("add_remove must hold under AddRemove(n)")
        out.append(("add_remove", ar))
    rep = replacement
    if rep is None:
        rep = primary if isinstance(rel, Substitute) else primary.under(Substitute(rel.n))
    if not isinstance(rep.relation, Substitute):
        raise PrivacyError("replacement must hold under Substitute(n)")
    out.append(("replacement", rep))
    if delta is not None:
        for name, st in list(out):
            if isinstance(st.measure, ZCDP):
                out.append((f"{name}_approx_dp", st.to_approx_dp(delta)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


def statement_manifest_body(
    *,
    kind: str,
    release: StatementRelease,
    max_units: int,
    config: Mapping[str, Any],
    input_description: Mapping[str, Any],
    rng_name: str,
    created_utc: str | None,
    files: dict[str, Any],
    universe_spec: dict[str, Any] | None = None,
    key_columns: list[str] | None = None,
) -> dict[str, Any]:
    """The manifest dict (before sealing) of a statement-envelope release."""
    from dpspark.release.writer import input_section

    body: dict[str, Any] = {
        **manifest_header(kind, rng_name, created_utc, max_units),
        "envelope": ENVELOPE,
        "mechanism": {
            "name": str(config.get("mechanism", "")),
            "algorithm": release.algorithm,
            "parameters": json_safe(dict(release.parameters), "release.parameters"),
        },
        "privacy": {
            "statements": {
                name: {"statement": st.describe(), "text": st.text()} for name, st in release.privacy
            },
            "order": [name for name, _ in release.privacy],
        },
        "accuracy": {"statement": release.accuracy.describe(), "text": release.accuracy.text()},
        "input": input_section(input_description),
        "config": json_safe(dict(config), "config"),
        "section": json_safe(dict(release.section), "section"),
        "files": files,
    }
    if universe_spec is not None:
        body["universe"] = universe_spec
        body["key_columns"] = list(key_columns or [])
    return body


def write_statement_release(
    out_path: str | Path,
    *,
    release: StatementRelease,
    universe: "Universe | None",
    key_columns: list[str],
    config: Mapping[str, Any],
    input_description: Mapping[str, Any],
    rng_name: str,
    created_utc: str | None,
    kind: str,
) -> Path:
    """Atomically write a statement-envelope release (the writer of every non-histogram kind)."""
    import pyarrow.parquet as pq

    from dpspark.release.writer import write_release_dir

    if not isinstance(release, StatementRelease):
        raise TypeError("a statement release is written from a StatementRelease")
    n = config.get("max_units")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("config.max_units (n) must be an integer >= 1")

    def write_data(tmp: Path) -> None:
        for name, table in sorted(release.tables.items()):
            pq.write_table(table, tmp / f"{name}.parquet")

    def build(spec: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
        return statement_manifest_body(
            kind=kind, release=release, max_units=n, config=config, input_description=input_description,
            rng_name=rng_name, created_utc=created_utc, files=files,
            universe_spec=spec if universe is not None else None, key_columns=key_columns,
        )

    return write_release_dir(out_path, universe, write_data, build, created_utc)


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatementManifest(ManifestHeader):
    """A parsed, validated statement-envelope manifest."""

    mechanism: str
    algorithm: str
    parameters: dict[str, Any]
    privacy: dict[str, PrivacyStatement]
    accuracy: AccuracyStatement
    section: dict[str, Any]
    config: dict[str, Any]
    input: dict[str, Any]
    files: dict[str, FileEntry]
    universe_spec: Optional[dict[str, Any]] = None
    key_columns: tuple[str, ...] = ()

    @property
    def add_remove(self) -> Optional[PrivacyStatement]:
        """The statement under add/remove of one unit (None when the release states none)."""
        return self.privacy.get("add_remove")

    @property
    def replacement(self) -> Optional[PrivacyStatement]:
        """The statement under replacement of one unit (None when the release states none)."""
        return self.privacy.get("replacement")

    def privacy_text(self) -> str:
        """Every privacy statement, one per line, in the manifest's order."""
        return "\n".join(f"{name}: {st.text()}" for name, st in self.privacy.items())


#: the longest text a statement object may hold in any one field (a theorem, notes, a condition: the writer's are
#: under 1,000 characters; the whole statement's rendered ``text`` has the same schema bound)
MAX_STATEMENT_TEXT = 20000


def _texts_bounded(obj: Any, name: str, where: str) -> None:
    """Every string under ``obj`` (a statement's JSON) is at most :data:`MAX_STATEMENT_TEXT` characters."""
    if isinstance(obj, str):
        if len(obj) > MAX_STATEMENT_TEXT:
            raise fail(name, f"{where} holds a text longer than {MAX_STATEMENT_TEXT} characters")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _texts_bounded(key, name, where)
            _texts_bounded(value, name, f"{where}.{key}")
    elif isinstance(obj, list):
        for value in obj:
            _texts_bounded(value, name, where)


def parse_statements(obj: dict[str, Any], header: dict[str, Any], files: dict[str, FileEntry], name: str,
                     limits: ReadLimits, kind: Any) -> StatementManifest:
    """The general statements of a manifest whose header and files the envelope has checked.

    ``kind``: the :class:`~dpspark.release.kinds.ReleaseKind` whose codec checks the ``section``.
    """
    n = header["max_units"]
    stmts = obj["privacy"]["statements"]
    order = obj["privacy"]["order"]
    if sorted(order) != sorted(stmts) or len(set(order)) != len(order):
        raise fail(name, "privacy.order must list every statement once")
    for key in order:
        _texts_bounded(stmts[key]["statement"], name, f"privacy.statements.{key}")
    _texts_bounded(obj["accuracy"]["statement"], name, "accuracy.statement")
    privacy: dict[str, PrivacyStatement] = {}
    try:
        for key in order:
            st = PrivacyStatement.from_description(stmts[key]["statement"], f"privacy.statements.{key}")
            rel = st.relation
            if isinstance(rel, (AddRemove, Substitute)) and rel.n != n:
                raise fail(name, f"privacy.statements.{key} holds for n = {rel.n}, not max_units = {n}")
            privacy[key] = st
        accuracy = AccuracyStatement.from_description(obj["accuracy"]["statement"], "accuracy.statement")
    except (DescriptionError, PrivacyError) as exc:
        raise fail(name, f"invalid statement ({exc})") from None
    if "add_remove" not in privacy and "replacement" not in privacy:
        raise fail(name, "the manifest states no privacy under add/remove or replacement")
    if "add_remove" in privacy and not isinstance(privacy["add_remove"].relation, AddRemove):
        raise fail(name, "privacy.statements.add_remove does not hold under add/remove")
    if "replacement" in privacy and not isinstance(privacy["replacement"].relation, Substitute):
        raise fail(name, "privacy.statements.replacement does not hold under replacement")
    out = StatementManifest(
        **header,
        mechanism=obj["mechanism"]["name"],
        algorithm=obj["mechanism"]["algorithm"],
        parameters=obj["mechanism"]["parameters"],
        privacy=privacy,
        accuracy=accuracy,
        section=obj["section"],
        config=obj["config"],
        input=obj["input"],
        files=files,
        universe_spec=obj.get("universe"),
        key_columns=tuple(obj.get("key_columns", ())),
    )
    from dpspark.release.rederive import check_statements

    check_statements(out, name)  # a resealed edit of one statement, n or rho is refused here
    check = kind.codec_fn()
    if check is not None:
        check(out.section, out, name)  # the kind's own section and its re-derivations
    return out
