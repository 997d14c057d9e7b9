"""Reader of release kind "sample": records drawn by a private sampler (RSSS), one per disjoint batch.

Section format (shared by every sampler that writes this kind)::

    {"samples": [...], "columns": [...], "batches": m, "independence": "independent only across batches"}

``samples`` holds m drawn records: a key value (one key column), a list of key values (several key columns)
or a row of d values (the product samplers). The samples are independent only across batches: each is
drawn from its own disjoint batch of units with fresh coins.
"""

from __future__ import annotations

from typing import Any

from dpspark.lookup.statement_base import StatementLookup, section_keys_and_columns
from dpspark.release.errors import ReleaseFormatError
from dpspark.mechanisms.samplers.section import KEYED, KIND, check_sample_section  # noqa: F401


class SampleLookup(StatementLookup):
    """An opened "sample" release: :meth:`samples` (every drawn record), :attr:`sample` (when m = 1)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.manifest.mechanism in KEYED:
            self._check_keys()

    def _check_keys(self) -> None:
        """Every k-ary sample is a key of the release's universe (its spec is in the manifest)."""
        from dpspark.release.files import load_universe_spec

        where = self.root / "manifest.json"
        if self.manifest.universe_spec is None or len(self.manifest.key_columns) != len(self.columns):
            raise ReleaseFormatError(f"{where}: a {self.manifest.mechanism} release states its universe and key columns")
        universe = load_universe_spec(self.manifest.universe_spec, self.manifest.files, self.root)
        for s in self.section["samples"]:
            try:
                universe.encode(tuple(s) if isinstance(s, list) else s)
            except Exception:  # OutOfUniverseError, or a value of the wrong type for this universe
                raise ReleaseFormatError(f"{where}: a sample is not a key of the release's universe") from None

    def samples(self) -> list[Any]:
        """The drawn records, one per disjoint batch (values, or rows of values)."""
        return list(self.section["samples"])

    @property
    def sample(self) -> Any:
        """The one drawn record of a single-sample release (ValueError when there are several)."""
        s = self.samples()
        if len(s) != 1:
            raise ValueError(f"this release holds {len(s)} samples (one per batch); use samples()")
        return s[0]

    @property
    def columns(self) -> list[str]:
        """The input columns a sample's values come from, in order."""
        return list(self.section["columns"])

    @property
    def batches(self) -> int:
        """m, the number of disjoint batches (= samples)."""
        return int(self.section["batches"])

    def to_pandas(self) -> Any:
        """One row per sample: ``batch`` (the disjoint batch of units it was drawn from), then one column per
        input column (a k-ary sample's key columns, or a product sample's d binary columns). The values are the
        drawn records themselves: exact, no float to read beside them."""
        import pandas as pd

        names = self.columns
        rows = [list(x) if isinstance(x, (list, tuple)) and len(names) > 1 or isinstance(x, list) else [x]
                for x in self.samples()]
        frame = pd.DataFrame(rows, columns=names) if rows else pd.DataFrame({c: [] for c in names})
        frame.insert(0, "batch", list(range(len(rows))))
        return frame

    def describe_lines(self) -> list[tuple[str, str]]:
        """``dpspark inspect`` lines: the columns, the samples (first 10) and the independence caveat."""
        s = self.samples()
        shown = ", ".join(_short(repr(x)) for x in s[:10]) + (f", ... ({len(s)} in all)" if len(s) > 10 else "")
        return [
            ("columns", ", ".join(self.columns)),
            ("samples", f"{len(s)} (one per disjoint batch of units): {shown}"),
            ("independence", self.section["independence"]),
        ]


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 5] + " ...]"
