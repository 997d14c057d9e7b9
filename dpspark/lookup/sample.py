"""Reader of release kind "sample": records drawn by a private sampler (RSSS), one per disjoint batch.

Section format (shared by every sampler that writes this kind)::

    {"samples": [...], "columns": [...], "batches": m, "independence": "independent only across batches"}

``samples`` holds m drawn records: a key value (one key column), a list of key values (several key columns)
or a row of d values (the product samplers). The samples are independent only across batches: each is
drawn from its own disjoint batch of units with fresh coins.
"""

from __future__ import annotations

from typing import Any

from dpspark.lookup.statement import StatementLookup, section_keys_and_columns
from dpspark.release.errors import ReleaseFormatError

KIND = "sample"
_KEYS = {"samples", "columns", "batches", "independence"}


def check_sample_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """Manifest check of a "sample" section: the four keys, one sample per batch, rows as wide as the columns."""
    columns = section_keys_and_columns(section, _KEYS, "columns", "sample", name)
    samples, batches = section["samples"], section["batches"]
    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 1:
        raise ReleaseFormatError(f"{name}: sample.batches must be an int >= 1")
    if not isinstance(samples, list) or len(samples) != batches:
        raise ReleaseFormatError(f"{name}: sample.samples must hold one sample per batch ({batches})")
    if len(columns) > 1 and not all(isinstance(s, list) and len(s) == len(columns) for s in samples):
        raise ReleaseFormatError(f"{name}: each sample must be a row of {len(columns)} values")
    if not isinstance(section["independence"], str):
        raise ReleaseFormatError(f"{name}: sample.independence must be a string")


class SampleLookup(StatementLookup):
    """An opened "sample" release: :meth:`samples` (every drawn record), :attr:`sample` (when m = 1)."""

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


from dpspark.release.statement import register_section_check  # noqa: E402

register_section_check(KIND, check_sample_section)
