"""Open a release directory and look counts up. Needs only numpy and pyarrow: no Spark, no JVM.

Keys are encoded with the universe's vectorized encoder and found by binary
search in the sorted index column, so :meth:`ReleaseLookup.counts` has no
per-key Python loop (except for hashed universes, whose encoder hashes each
key, and keys that do not fit an Arrow array, e.g. ints beyond 64 bits).

Keys outside the universe raise :class:`KeyNotInUniverseError`
(:mod:`dpspark.lookup.keys`); its message never echoes the key.

:func:`open_release` dispatches on the manifest's kind: sparse releases open
as :class:`ReleaseLookup`, compact ones as
:class:`~dpspark.mechanisms.compact.reader.CompactReleaseLookup` (same lookup methods).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.errors import DPSparkError
from dpspark.lookup.describe import accuracy_text, condition_text, privacy_text
from dpspark.lookup.keys import (
    KeyNotInUniverseError,
    check_invalid_policy,
    encode_key,
    encode_keys,
    keys_to_arrow,
    valid_index_words,
)
from dpspark.privacy.accuracy import AccuracyStatement
from dpspark.release.manifest import DEFAULT_LIMITS, Manifest, ReadLimits, read_manifest
from dpspark.release.reader import offset_keys, open_release_files, verify_files
from dpspark.universe import Universe, index_to_bytes

if TYPE_CHECKING:
    from dpspark.mechanisms.compact.reader import CompactReleaseLookup

__all__ = ["BELOW_THRESHOLD", "Estimate", "KeyNotInUniverseError", "ReleaseLookup", "open_release"]

#: exceptions a damaged file can raise inside a reader (pyarrow's errors derive from ValueError/TypeError/...)
_FOREIGN = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, ZeroDivisionError,
            RecursionError, ArithmeticError, LookupError, OSError, pa.ArrowException, np.linalg.LinAlgError)
#: marks a ReleaseFormatError raised by open_release's safety net rather than by a reader's own check
NET_MARK = "unchecked"

#: the ``note`` of a bin whose noisy count is at or below the accuracy threshold
BELOW_THRESHOLD = "below threshold: may be noise"
NOTE_COLUMN = "note"


@dataclass(frozen=True)
class Estimate:
    """A noisy count with its error bar: |value - true| <= a with probability >= 1 - beta, under ``condition``."""

    value: int
    a: int
    beta: Fraction
    holds_above: int
    condition: str
    a_simultaneous: int
    beta_simultaneous: Fraction

    @property
    def interval(self) -> tuple[int, int]:
        """(value - a, value + a)."""
        return self.value - self.a, self.value + self.a


class ManifestStatements:
    """The privacy and accuracy statements of an opened release (any kind); needs ``self.manifest``."""

    manifest: Manifest
    universe: Universe
    #: appended to the per-query condition (compact releases: the bar holds for empty bins too)
    condition_note = ""

    def count(self, key: Any) -> int:  # pragma: no cover - every release kind defines it
        raise NotImplementedError

    def estimate(self, key: Any) -> Estimate:
        """The noisy count with its per-query error bar, beta and the condition under which it holds."""
        acc = self.manifest.accuracy
        condition = condition_text(acc) + self.condition_note
        if not self.universe.is_bijection:
            condition += "; hashed keys that collide share one bin (their counts add up)"
        return Estimate(
            value=self.count(key),
            a=acc.a_per_query,
            beta=acc.beta_per_query,
            holds_above=acc.per_query_above,
            condition=condition,
            a_simultaneous=acc.a_simultaneous,
            beta_simultaneous=acc.beta_simultaneous,
        )

    @property
    def privacy(self) -> str:
        """The privacy guarantee in plain words."""
        return privacy_text(self.manifest)

    @property
    def accuracy(self) -> AccuracyStatement:
        """The exact accuracy statement (see ``accuracy_text`` for when the per-query bar holds)."""
        return self.manifest.accuracy

    @property
    def accuracy_text(self) -> str:
        """The accuracy statement in plain words."""
        return accuracy_text(self.manifest)


class ReleaseLookup(ManifestStatements):
    """A verified, opened release. Create with :func:`open_release`."""

    def __init__(self, path: Path, *, verify: bool, limits: ReadLimits, manifest: Manifest | None = None) -> None:
        self.path = path
        self.manifest: Manifest
        self.universe: Universe
        self.manifest, self.universe, self._parquet, bins = open_release_files(
            path, verify=verify, limits=limits, manifest=manifest
        )
        self._offsets = bins.offsets
        self._counts = bins.counts
        self._width = self.manifest.index_width
        self.verified = verify

    def __len__(self) -> int:
        """Number of released (nonzero-listed) bins."""
        return len(self._counts)

    def verify(self) -> None:
        """Re-check every data file's size and sha256 against the manifest."""
        verify_files(self.manifest, self.path, True)
        self.verified = True

    # ---- lookups ----------------------------------------------------------------------------
    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        out = np.zeros(len(keys), dtype=np.int64)
        if not len(self._offsets) or not len(keys):
            return out
        # Searching sorted needles is several times faster (cache-friendly) than random ones.
        order = np.argsort(keys, kind="stable")
        needles = keys[order]
        pos = np.minimum(np.searchsorted(self._offsets, needles), len(self._offsets) - 1)
        hit = self._offsets[pos] == needles
        out[order] = np.where(hit, self._counts[pos], 0)
        return out

    def _keys(self, index_words: pa.Array) -> np.ndarray:
        return offset_keys(index_words, self._width, self.manifest.universe_size)

    def count(self, key: Any) -> int:
        """The released noisy count of one key (0 when its bin was not released)."""
        index = encode_key(self.universe, key)
        word = pa.array([index_to_bytes(index, self._width)], type=pa.binary(self._width))
        return int(self._lookup(self._keys(word))[0])

    def counts(self, keys: Any, invalid: str = "raise") -> np.ndarray:
        """Noisy counts (int64) of many keys, vectorized.

        ``keys``: for scalar universes a sequence, numpy array or Arrow array of keys;
        for tuple universes a pyarrow Table/RecordBatch with the key columns, a
        struct array, or a sequence of tuples.

        ``invalid="raise"`` (default): a key outside the universe raises
        :class:`KeyNotInUniverseError` (naming its position, never the key).
        ``invalid="mask"``: every valid key is answered and the result is a
        ``numpy.ma.MaskedArray`` whose mask is True at the invalid keys' positions.
        """
        if check_invalid_policy(invalid) == "mask":
            words, valid = valid_index_words(self.universe, keys)
            values = np.zeros(len(valid), dtype=np.int64)
            if len(words):
                values[valid] = self._lookup(self._keys(words))
            return np.ma.MaskedArray(values, mask=~valid)
        arrow_keys = keys_to_arrow(self.universe, keys)
        if arrow_keys is None:  # keys beyond Arrow's types: scalar path
            return np.array([self.count(k) for k in keys], dtype=np.int64)
        index = encode_keys(self.universe, arrow_keys)
        if not len(index):
            return np.zeros(0, dtype=np.int64)
        return self._lookup(self._keys(index))

    def below_threshold(self, noisy_counts: np.ndarray) -> np.ndarray:
        """Which noisy counts are at or below the accuracy threshold (the per-key bar does not hold there).

        Such a bin may be noise: its true count can be 0 (pure_sparse releases hold
        random bins from the mixing step and the top-(n+1) empty bins by design).
        """
        above = self.manifest.accuracy.per_query_above
        return np.asarray(noisy_counts) <= above if above >= 0 else np.zeros(len(noisy_counts), dtype=bool)

    def table(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The bins as an Arrow table (decoded key columns, index words, noisy counts, ``note``).

        ``note`` is ``"below threshold: may be noise"`` for bins whose noisy count is
        at or below the accuracy threshold (:meth:`below_threshold`), else null. It is
        computed here from the released counts (not stored in the release).
        """
        want = list(columns) if columns is not None else None
        stored = None if want is None else [c for c in want if c != NOTE_COLUMN]
        if want is not None and NOTE_COLUMN in want and "noisy_count" not in want:
            stored = [*stored, "noisy_count"]  # type: ignore[list-item]
        try:
            table = self._parquet.read(columns=stored)
        except Exception as exc:
            from dpspark.release.errors import ReleaseFormatError

            raise ReleaseFormatError(f"{self.path / 'bins.parquet'}: cannot read the bins ({type(exc).__name__})") from None
        if want is None or NOTE_COLUMN in want:
            marked = self.below_threshold(table.column("noisy_count").to_numpy())
            note = pc.if_else(pa.array(marked), pa.scalar(BELOW_THRESHOLD), pa.scalar(None, pa.string()))
            table = table.append_column(NOTE_COLUMN, note)
            if want is not None:
                table = table.select(want)
        return table

    def to_pandas(self) -> Any:
        """The bins as a pandas DataFrame: key columns, ``noisy_count``, then the error bar and ``note``.

        ``error_bar`` is the per-query a: |noisy - true| <= a with probability >= 1 - ``error_bar_beta``,
        for true counts above ``error_bar_holds_above`` (-1: every count); ``note`` marks bins at or below
        the accuracy threshold. Index words and raw key bytes stay in :meth:`table`.
        """
        acc = self.manifest.accuracy
        columns = self.manifest.raw["bins"]["columns"]
        keys = [c["name"] for c in columns if c["role"] == "key"]
        table = self.table(keys + ["noisy_count", NOTE_COLUMN])
        n = table.num_rows
        table = table.select(keys + ["noisy_count"])
        table = table.append_column("error_bar", pa.array([acc.a_per_query] * n, pa.int64()))
        table = table.append_column("error_bar_beta", pa.array([float(acc.beta_per_query)] * n))  # report
        table = table.append_column("error_bar_holds_above", pa.array([acc.per_query_above] * n, pa.int64()))
        table = table.append_column(NOTE_COLUMN, self.table([NOTE_COLUMN]).column(NOTE_COLUMN))
        return table.to_pandas()


def open_release(
    path: str | Path, verify: bool = True, limits: ReadLimits = DEFAULT_LIMITS, trusted_keys: Any = None,
) -> "ReleaseLookup | CompactReleaseLookup":
    """Open a release directory (sparse or compact, by the manifest's kind) for lookups.

    With ``verify`` (default) every data file's sha256 is checked once, here;
    lookups never re-check. ``verify=False`` skips that check, and gives up
    the guarantee that the answers are the release's: a damaged or altered
    data file is then read as is, and can return wrong counts or **wrong
    keys** (one flipped byte in a key column can show ``Paris`` for another
    key) without any error. Use it only on files you just verified (call
    ``.verify()`` later to check). Raises :class:`~dpspark.release.errors.ReleaseFormatError` for
    missing, damaged, wrong-version or oversized releases, and for manifests whose statements do not
    re-derive (:mod:`dpspark.release.rederive`).

    ``trusted_keys`` (Ed25519 public keys: PEM file paths, PEM bytes or key objects): the release must
    carry a signature by one of them over its manifest's bytes (:mod:`dpspark.release.signature`), else
    :class:`~dpspark.release.signature.ReleaseSignatureError`. With ``verify`` the manifest's checksums
    then extend the signature to every data file. None (default): any signature is ignored.
    """
    from dpspark.release.errors import ReleaseFormatError

    root = Path(path)
    if not root.is_dir():
        raise ReleaseFormatError(f"{root}: not a release directory (missing or not a directory)")
    from dpspark.release.manifest import MANIFEST_NAME, parse_manifest, read_regular_file

    name = root / MANIFEST_NAME
    data = read_regular_file(name, limits.max_manifest_bytes, "the manifest")  # read once: signed = parsed
    if trusted_keys is not None:
        from dpspark.release.signature import check_signature

        check_signature(root, data, list(trusted_keys))
    manifest = parse_manifest(data, str(name), limits)
    from dpspark.lookup.readers import reader_for

    cls = reader_for(manifest.kind, str(root / "manifest.json"))
    try:
        return cls(root, manifest=manifest, verify=verify, limits=limits)
    except DPSparkError:
        raise
    except _FOREIGN as exc:
        # Every reader checks what it returns; this net only turns a case a check missed into the one
        # error a caller handles (the fuzz harness counts these separately: it expects none).
        raise ReleaseFormatError(f"{root}: the release is malformed ({NET_MARK} {type(exc).__name__})") from None
