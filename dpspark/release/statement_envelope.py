"""The statement envelope: the manifest of every release that is not a keyed histogram.

Histogram manifests (kinds ``sparse`` and ``compact``) state e^eps~ = p/q plus a bias, and
per-query/simultaneous error bars on counts (:mod:`dpspark.release.manifest`). Answers, samples and
learned distributions state other things: a rational or zCDP guarantee, a deterministic bound, a
total-variation claim. Their manifests carry the general vocabulary of :mod:`dpspark.privacy`
instead (``"envelope": "statement"``):

* ``privacy.statements``: named :class:`~dpspark.privacy.PrivacyStatement` values in their exact
  ``describe()`` form (``add_remove``, ``replacement`` and, for zCDP, the certified (eps, delta)
  conversions at the configured delta), each with its text;
* ``accuracy``: an :class:`~dpspark.privacy.AccuracyStatement` (deterministic, TV or general claims);
* ``section``: the kind's own JSON content (answers, samples, a distribution), exact;
* ``files``: sha256 and size of each data table (``<name>.parquet``).

The format, version, checksum and size limits are those of every manifest. A mechanism returns a
:class:`StatementRelease` from ``run()``; :func:`write_statement_release` is the writer registered for
its kind in :mod:`dpspark.release.writers`. Like every manifest, nothing here depends on the data except
the DP outputs in ``section`` and the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from dpspark.privacy.accuracy import AccuracyStatement
from dpspark.privacy.errors import DescriptionError, PrivacyError
from dpspark.privacy.measures import ZCDP
from dpspark.privacy.relations import AddRemove, Substitute
from dpspark.privacy.statement import PrivacyStatement
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_int
from dpspark.release.manifest import FileEntry, ManifestHeader, ReadLimits, json_safe, manifest_header

if TYPE_CHECKING:
    import pyarrow as pa

    from dpspark.universe import Universe

#: the value of the manifest's ``envelope`` field that selects this reader
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
    kind: str | None = None,
) -> Path:
    """Atomically write a statement-envelope release (the writer of every non-histogram kind)."""
    import pyarrow.parquet as pq

    from dpspark.release.writer import write_release_dir

    if not isinstance(release, StatementRelease):
        raise TypeError("a statement release is written from a StatementRelease")
    kind = kind or _kind_of(config)
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


def _kind_of(config: Mapping[str, Any]) -> str:
    from dpspark.mechanisms.registry import mechanism_class

    return mechanism_class(str(config["mechanism"])).release_kind


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


#: kind -> a check of its ``section`` (raises ReleaseFormatError)
_CHECKS: dict[str, Callable[[dict[str, Any], StatementManifest, str], None]] = {}


def register_section_check(kind: str, check: Callable[[dict[str, Any], StatementManifest, str], None]) -> None:
    """Register ``check(section, manifest, name)`` for release kind ``kind`` (raise ReleaseFormatError)."""
    _CHECKS[kind] = check


def _fail(name: str, message: str) -> ReleaseFormatError:
    return ReleaseFormatError(f"{name}: {message}")


def parse_statement_manifest(obj: dict[str, Any], name: str, limits: ReadLimits) -> StatementManifest:
    """Validate a statement-envelope manifest (format, version and checksum already checked)."""
    from dpspark.release.schema import SchemaViolation, validate

    try:
        validate(obj, statement_schema())
    except SchemaViolation as exc:
        raise _fail(name, f"manifest does not match the schema: {exc}") from None
    rng = obj["rng"]
    if rng["test_only"] != ("TEST ONLY" in rng["name"].upper()):
        raise _fail(name, "rng.test_only contradicts the generator's name")
    try:
        n = str_to_int(obj["max_units"], 256)
    except ValueError as exc:
        raise _fail(name, f"max_units: {exc}") from None
    if n < 1:
        raise _fail(name, "max_units must be >= 1")
    stmts = obj["privacy"]["statements"]
    order = obj["privacy"]["order"]
    if sorted(order) != sorted(stmts) or len(set(order)) != len(order):
        raise _fail(name, "privacy.order must list every statement once")
    privacy: dict[str, PrivacyStatement] = {}
    try:
        for key in order:
            st = PrivacyStatement.from_description(stmts[key]["statement"], f"privacy.statements.{key}")
            rel = st.relation
            if isinstance(rel, (AddRemove, Substitute)) and rel.n != n:
                raise _fail(name, f"privacy.statements.{key} holds for n = {rel.n}, not max_units = {n}")
            privacy[key] = st
        accuracy = AccuracyStatement.from_description(obj["accuracy"]["statement"], "accuracy.statement")
    except (DescriptionError, PrivacyError) as exc:
        raise _fail(name, f"invalid statement ({exc})") from None
    if "add_remove" not in privacy and "replacement" not in privacy:
        raise _fail(name, "the manifest states no privacy under add/remove or replacement")
    if "add_remove" in privacy and not isinstance(privacy["add_remove"].relation, AddRemove):
        raise _fail(name, "privacy.statements.add_remove does not hold under add/remove")
    if "replacement" in privacy and not isinstance(privacy["replacement"].relation, Substitute):
        raise _fail(name, "privacy.statements.replacement does not hold under replacement")
    if len(obj["files"]) > limits.max_files:
        raise _fail(name, f"manifest lists more than {limits.max_files} files")
    files: dict[str, FileEntry] = {}
    for fname, entry in obj["files"].items():
        try:
            size = str_to_int(entry["bytes"], 128)
        except ValueError as exc:
            raise _fail(name, f"files.{fname}.bytes: {exc}") from None
        if size > limits.max_file_bytes:
            raise _fail(name, f"files.{fname} declares {size} bytes, above the limit of {limits.max_file_bytes} bytes")
        files[fname] = FileEntry(entry["sha256"], size)
    out = StatementManifest(
        raw=obj,
        schema_version=obj["schema_version"],
        dpspark_version=obj["dpspark_version"],
        kind=obj["kind"],
        created_utc=obj["created_utc"],
        rng_name=rng["name"],
        rng_test_only=rng["test_only"],
        max_units=n,
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
    check = _CHECKS.get(out.kind)
    if check is None:
        _load_reader_module(out.kind)  # a kind's reader module registers its section check on import
        check = _CHECKS.get(out.kind)
    if check is not None:
        check(out.section, out, name)
    return out


def _load_reader_module(kind: str) -> None:
    from dpspark.lookup.readers import reader_for

    try:
        reader_for(kind)
    except ReleaseFormatError:
        pass


_SCHEMA: dict[str, Any] | None = None


def statement_schema() -> dict[str, Any]:
    """The JSON Schema of statement-envelope manifests (``statement.schema.json`` beside this module)."""
    global _SCHEMA
    if _SCHEMA is None:
        import json

        _SCHEMA = json.loads((Path(__file__).with_name("statement.schema.json")).read_text("utf-8"))
    return _SCHEMA
