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

KIND = "sample"
_KEYS = {"samples", "columns", "batches", "independence"}


#: mechanisms whose samples are rows of d bits (0 or 1, one per column)
BIT_ROWS = ("bernoulli_sampler", "product_sampler")
#: mechanisms whose samples are keys of the release's universe
KEYED = ("kary_sampler",)
#: longest text value of a sample (a key of a string universe is far shorter)
MAX_TEXT = 1 << 16


def _scalar(value: Any) -> bool:
    """A sample's value: a JSON string or integer (never null, a float, a boolean, a list or an object)."""
    if isinstance(value, str):
        return len(value) <= MAX_TEXT
    return isinstance(value, int) and not isinstance(value, bool)


def check_sample_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """Manifest check of a "sample" section: the four keys, one sample per batch, every sample well-typed.

    Rows of the bit samplers hold exactly d values in {0, 1}; a k-ary sample is one key value (a row of
    values with several key columns); any other sample is a string or an integer or a row of them.
    """
    columns = section_keys_and_columns(section, _KEYS, "columns", "sample", name)
    samples, batches = section["samples"], section["batches"]
    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 1:
        raise ReleaseFormatError(f"{name}: sample.batches must be an int >= 1")
    if not isinstance(samples, list) or len(samples) != batches:
        raise ReleaseFormatError(f"{name}: sample.samples must hold one sample per batch ({batches})")
    if not isinstance(section["independence"], str):
        raise ReleaseFormatError(f"{name}: sample.independence must be a string")
    mechanism = getattr(manifest, "mechanism", None)
    recorded = getattr(manifest, "parameters", {}).get("samples")
    if recorded is not None and recorded != batches:
        raise ReleaseFormatError(f"{name}: sample.batches differs from mechanism.parameters.samples")
    if mechanism in BIT_ROWS:
        if not all(isinstance(s, list) and len(s) == len(columns) and all(_int01(x) for x in s) for s in samples):
            raise ReleaseFormatError(f"{name}: each sample must be a row of {len(columns)} bits (0 or 1)")
        return
    if len(columns) > 1:
        if not all(isinstance(s, list) and len(s) == len(columns) and all(_scalar(x) for x in s) for s in samples):
            raise ReleaseFormatError(f"{name}: each sample must be a row of {len(columns)} values")
    elif not all(_scalar(s) for s in samples):
        raise ReleaseFormatError(f"{name}: each sample must be a string or an integer value")


def _int01(value: Any) -> bool:
    return type(value) is int and value in (0, 1)


class SampleLookup(StatementLookup):
    """An opened "sample" release: :meth:`samples` (every drawn record), :attr:`sample` (when m = 1)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.manifest.mechanism in KEYED:
            self._check_keys()

    def _check_keys(self) -> None:
        """Every k-ary sample is a key of the release's universe (its spec is in the manifest)."""
        from dpspark.release.reader import load_universe_spec

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


from dpspark.release.statement_envelope import register_section_check  # noqa: E402

register_section_check(KIND, check_sample_section)
