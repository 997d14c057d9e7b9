"""Declarative aggregates a mechanism asks the engine for; backends (Spark, Arrow) compute them.

A stage names what to aggregate with explicit public parameters only (never a config object), so the
same description runs on every backend and can be shown before any data is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpspark.config import ReleaseSpec
    from dpspark.universe import Universe


@dataclass(frozen=True)
class CountsStage:
    """Exact count per universe index, after contribution bounding.

    * ``unit_column``: the privacy unit (None: every row is a unit);
    * ``max_keys_per_unit`` (k): a unit keeps at most k of its distinct in-universe keys, those with the
      smallest keyed hash of (unit, index) - a stable choice that depends on the unit's own rows only;
    * ``max_rows_per_key`` (c): a unit adds min(rows, c) to a key's count;
    * ``max_units`` (n) and ``on_excess_units``: "truncate" keeps the n units with the smallest keyed hash
      of the unit id (rows: the first n rows in keyed-hash order of their index), "refuse" fails the job
      before any noise when there are more than n (a curator-side check).
    """

    key_columns: tuple[str, ...]
    universe: "Universe"
    unit_column: str | None
    out_of_universe: str
    max_units: int
    max_keys_per_unit: int = 1
    max_rows_per_key: int = 1
    on_excess_units: str = "truncate"

    @classmethod
    def from_spec(cls, spec: "ReleaseSpec") -> "CountsStage":
        """The count stage of a histogram release spec."""
        return cls(
            key_columns=tuple(spec.key_columns), universe=spec.universe, unit_column=spec.unit_column,
            out_of_universe=spec.out_of_universe, max_units=spec.max_units,
            max_keys_per_unit=spec.max_keys_per_unit, max_rows_per_key=spec.max_rows_per_key,
            on_excess_units=spec.on_excess_units,
        )

    @property
    def columns(self) -> list[str]:
        """Every input column the stage reads."""
        return list(self.key_columns) + ([self.unit_column] if self.unit_column else [])
