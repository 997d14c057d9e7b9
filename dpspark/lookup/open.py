"""Open a release directory: verify the envelope (and a signature), then dispatch on the kind. No Spark, no JVM.

:func:`open_release` reads the manifest once, checks a signature when asked, parses it through the one
envelope (:mod:`dpspark.release.manifest`) and opens it with the reader its kind declares
(:mod:`dpspark.release.kinds`): a sparse release as :class:`~dpspark.mechanisms.histogram.reader.ReleaseLookup`,
a compact one as :class:`~dpspark.mechanisms.compact.reader.CompactReleaseLookup` (same lookup methods),
the others as their :class:`~dpspark.lookup.statement_base.StatementLookup` subclasses.

:class:`ManifestStatements` is the base of the counts kinds' lookups (sparse, compact): the estimate with its
per-query error bar and condition, the privacy and accuracy in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from dpspark.errors import DPSparkError
from dpspark.lookup.describe import accuracy_text, condition_text, privacy_text
from dpspark.privacy.accuracy import AccuracyStatement
from dpspark.release.counts_form import Manifest
from dpspark.release.header import DEFAULT_LIMITS, ReadLimits
from dpspark.universe import Universe

__all__ = ["BELOW_THRESHOLD", "Estimate", "ManifestStatements", "open_release"]

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

    @property
    def kind(self) -> str:
        """The release kind ("sparse", "compact")."""
        return self.manifest.kind

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

    # ---- notebook ----------------------------------------------------------------------------
    def html_values(self) -> tuple[Any, str]:
        """The values the HTML view shows (a pandas frame or None) and a note under them (override per kind)."""
        return None, ""

    def view(self) -> tuple[str, list[tuple[str, str]], str, str, Any, str]:
        """What the release shows of itself: (title, (label, text) facts, privacy, accuracy, values frame, note)."""
        from dpspark.lookup.describe import counted_line

        m = self.manifest
        facts = [("release", str(getattr(self, "path", ""))), ("mechanism", f"{m.algorithm} ({m.kind} release)"),
                 ("counted", f"{counted_line(m)} (after contribution bounding)"),
                 ("key columns", ", ".join(m.key_columns)), ("n", f"{m.max_units} units at most (declared, public)")]
        try:
            frame, note = self.html_values()
        except ImportError:  # the read library needs no pandas: the view then shows no values
            frame, note = None, "the values need pandas (to_pandas())"
        return f"dpspark release: {m.kind}", facts, privacy_text(m), accuracy_text(m), frame, note

    def _repr_html_(self) -> str:
        """The release in a notebook: what was counted, the values with their error bars, the guarantee."""
        from dpspark.lookup.frames import release_html

        return release_html(*self.view())

    def __repr__(self) -> str:
        """The release as text (what the notebook view shows, the values cut to the first rows)."""
        from dpspark.lookup.frames import release_text

        return release_text(*self.view())


def open_release(
    path: str | Path, verify: bool = True, limits: ReadLimits = DEFAULT_LIMITS, trusted_keys: Any = None,
) -> Any:
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
    :class:`~dpspark.release.signature.ReleaseSignatureError`. The manifest's checksums then extend the
    signature to every data file: with ``trusted_keys`` every data file is checked (``verify=False`` does not
    apply: a signed manifest over unchecked data would vouch for whatever the files hold). None (default): any
    signature is ignored.
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
        verify = True  # the signature covers the data files only through their checksums
    manifest = parse_manifest(data, str(name), limits)
    from dpspark.release.kinds import reader_for

    cls = reader_for(manifest.kind, str(root / "manifest.json"))
    try:
        return cls(root, manifest=manifest, verify=verify, limits=limits)
    except DPSparkError:
        raise
    except _FOREIGN as exc:
        # Every reader checks what it returns; this net only turns a case a check missed into the one
        # error a caller handles (the fuzz harness counts these separately: it expects none).
        raise ReleaseFormatError(f"{root}: the release is malformed ({NET_MARK} {type(exc).__name__})") from None
