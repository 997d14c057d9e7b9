"""The reader base of statement-envelope releases (answers, samples, learned distributions).

A kind's reader subclasses :class:`StatementLookup` and adds its own accessors (``answers()``,
``samples()``, ``sample(k, rng)``...). The base gives the manifest, the privacy and accuracy
statements in exact form and in words, the kind's section, its verified data tables, and the lines
``dpspark inspect`` prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpspark.release.errors import ReleaseFormatError
from dpspark.release.header import DEFAULT_LIMITS, ReadLimits

if TYPE_CHECKING:
    import pyarrow as pa

    from dpspark.privacy import AccuracyStatement, PrivacyStatement
    from dpspark.release.statements import StatementManifest


def section_keys_and_columns(section: Any, keys: frozenset[str] | set[str], columns_key: str, kind: str,
                             name: str) -> list[str]:
    """Manifest check shared by the section readers: exactly ``keys``, and a non-empty list of column names."""
    if not isinstance(section, dict) or set(section) != set(keys):
        raise ReleaseFormatError(f"{name}: a {kind} section holds exactly {sorted(keys)}")
    columns = section[columns_key]
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
        raise ReleaseFormatError(f"{name}: {kind}.{columns_key} must be a non-empty list of column names")
    return columns


class StatementLookup:
    """An opened statement-envelope release; every data file is checked once at open (``verify``)."""

    def __init__(self, path: Path, *, verify: bool = True, limits: ReadLimits = DEFAULT_LIMITS,
                 manifest: "StatementManifest | None" = None) -> None:
        from dpspark.release.manifest import read_manifest
        from dpspark.release.statements import StatementManifest

        self.root = Path(path)
        m = manifest if manifest is not None else read_manifest(self.root, limits)
        if not isinstance(m, StatementManifest):
            raise ReleaseFormatError(f"{self.root / 'manifest.json'}: a {m.kind} release is not a statement release")
        self.manifest: StatementManifest = m
        self.limits = limits
        self._verified = False
        self._check_files(verify)

    def _check_files(self, verify: bool) -> None:
        from dpspark.release.files import check_data_file

        for name, entry in self.manifest.files.items():
            check_data_file(self.root, name, entry, verify)
        self._verified = verify

    def verify(self) -> None:
        """Check every data file's sha256 against the manifest (ReleaseFormatError naming a damaged file)."""
        self._check_files(True)

    # --- statements ----------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """The release kind."""
        return self.manifest.kind

    @property
    def statements(self) -> "dict[str, PrivacyStatement]":
        """Every privacy statement, exact, by name (``add_remove``, ``replacement``, ...)."""
        return dict(self.manifest.privacy)

    @property
    def privacy(self) -> str:
        """The privacy guarantees in plain words, one per line (numbers shortened, rounded the safe way; the exact
        statements are :attr:`statements`)."""
        from dpspark.text.statements import statement_words

        return "\n".join(f"{name}: {statement_words(st)}" for name, st in self.manifest.privacy.items())

    @property
    def accuracy(self) -> "AccuracyStatement":
        """The exact accuracy statement."""
        return self.manifest.accuracy

    @property
    def accuracy_text(self) -> str:
        """The accuracy statement in plain words (numbers shortened; the exact one is :attr:`accuracy`)."""
        return self.accuracy_words()

    def accuracy_words(self, exact: bool = False) -> str:
        """The accuracy statement in words for ``inspect`` (``exact``: the manifest's exact text). A kind whose
        claims are in internal units overrides this to state them in the user's units."""
        from dpspark.text.statements import accuracy_words

        return accuracy_words(self.manifest.accuracy, exact)

    @property
    def section(self) -> dict[str, Any]:
        """The kind's own manifest section (exact values as strings)."""
        return self.manifest.section

    @property
    def parameters(self) -> dict[str, Any]:
        """The mechanism's public parameters as recorded (exact values as strings)."""
        return self.manifest.parameters

    def table(self, name: str) -> "pa.Table":
        """The data table ``<name>.parquet`` (its size and, with ``verify``, sha256 were checked at open)."""
        import pyarrow.parquet as pq

        fname = f"{name}.parquet"
        if fname not in self.manifest.files:
            raise KeyError(f"this release has no table {name!r} (tables: {sorted(self.tables())})")
        try:
            # one file: ParquetFile reads it without pyarrow.dataset (whose import pulls pyarrow.compute,
            # about 0.2 s of a read command's start-up); the same table as pq.read_table
            with pq.ParquetFile(self.root / fname) as source:
                table = source.read()
            _ = table.column_names  # names decode lazily: a name that is not UTF-8 raises here, not in a caller
        except Exception as exc:  # pyarrow raises many types on a damaged file (read with verify=False)
            raise ReleaseFormatError(f"{self.root / fname}: cannot read the table ({type(exc).__name__}); "
                                     "the file is damaged") from None
        return table

    def checked_table(self, name: str, schema: "list[tuple[str, Any]]", rows: int | None = None) -> "pa.Table":
        """``table(name)`` with exactly these (column, Arrow type) pairs and, if given, ``rows`` rows."""
        table = self.table(name)
        path = self.root / f"{name}.parquet"
        try:
            found = [(f.name, f.type) for f in table.schema]  # names decode lazily (UnicodeDecodeError)
            table.validate(full=True)  # strings must be valid UTF-8, offsets in range
        except Exception as exc:
            raise ReleaseFormatError(f"{path}: invalid Arrow data ({type(exc).__name__}); the file is damaged") from None
        if found != list(schema):
            raise ReleaseFormatError(f"{path}: columns or types differ from the {self.kind} layout "
                                     f"({', '.join(f'{n}: {t}' for n, t in schema)})")
        if rows is not None and table.num_rows != rows:
            raise ReleaseFormatError(f"{path}: {table.num_rows} rows where the manifest implies {rows}")
        return table

    def tables(self) -> list[str]:
        """The names of the release's data tables."""
        return sorted(f[: -len(".parquet")] for f in self.manifest.files if f.endswith(".parquet"))

    # --- inspect -------------------------------------------------------------------------------
    def describe_lines(self) -> list[tuple[str, str]]:
        """Kind-specific (label, text) lines for ``dpspark inspect`` (override in a kind's reader)."""
        return []

    def view(self) -> tuple[str, list[tuple[str, str]], str, str, Any, str]:
        """What the release shows of itself: (title, (label, text) facts, privacy, accuracy, values frame, note)."""
        from dpspark.text import readable_text

        m = self.manifest
        facts = [("release", str(self.root)), ("mechanism", f"{m.mechanism}: {m.algorithm}"),
                 ("n", f"{m.max_units} units at most (declared, public)")]
        facts += [(k.strip(), readable_text(v)) for k, v in self.describe_lines()]
        to_pandas = getattr(self, "to_pandas", None)
        note = self.html_note()
        try:
            frame = to_pandas() if callable(to_pandas) else None
        except ImportError:  # the read library needs no pandas: the view then shows no values
            frame, note = None, "the values need pandas (to_pandas())"
        return f"dpspark release: {m.kind}", facts, self.privacy, self.accuracy_text, frame, note

    def __repr__(self) -> str:
        """The release as text (what the notebook view shows, the values cut to the first rows)."""
        from dpspark.lookup.frames import release_text

        return release_text(*self.view())

    def _repr_html_(self) -> str:
        """The release in a notebook: its values (``to_pandas()``, first rows), the guarantee and the error bars."""
        from dpspark.lookup.frames import release_html

        return release_html(*self.view())

    def html_note(self) -> str:
        """A note under the values in a notebook (e.g. the unit of an error column); a kind's reader overrides it."""
        return ""
