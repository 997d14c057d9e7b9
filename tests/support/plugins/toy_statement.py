"""A test-only statement-envelope mechanism: one noisy clipped sum under zCDP, registered from the suite.

``toy_dgauss_sum`` sums a column clipped to [0, hi] (one pass, exact) and adds discrete Gaussian noise
with sigma the smallest grid value whose certified rho fits the (epsilon, delta) budget: rho =
rho(hi)-zCDP under add/remove (Canonne-Kamath-Steinke 2020, with the certificate of the implemented
law), stated with its CKS20 (eps, delta) conversions. Release kind ``toy_statement`` uses the generic
writer and reader base, so it exercises the statement envelope end to end with no edit to dpspark.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa

from dpspark.engine.stages import SumsStage
from dpspark.mechanisms.base import Mechanism, MechanismSpecError
from dpspark.mechanisms.zcdp_budget import rho_option, rho_within
from dpspark.noise.dgauss import DiscreteGaussian, smallest_sigma
from dpspark.privacy import AccuracyClaim, AccuracyStatement
from dpspark.release.statement_envelope import StatementRelease, standard_statements

KIND = "toy_statement"


def _parse_sum(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) != {"column", "hi"}:
        raise ValueError("needs exactly 'column' and 'hi'")
    if not isinstance(raw["hi"], int) or isinstance(raw["hi"], bool) or not 1 <= raw["hi"] <= 100:
        raise TypeError("hi must be an integer in [1, 100]")
    return dict(raw)


class ToyDGaussSum(Mechanism):
    """One clipped sum plus discrete Gaussian noise (rho-zCDP, CKS20 Thm 14 on the implemented law)."""

    name: ClassVar[str] = "toy_dgauss_sum"
    release_kind: ClassVar[str] = KIND
    delta: ClassVar[str] = "required"
    needs_keys: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = {"rho": None}
    option_parsers: ClassVar[dict[str, Any]] = {"rho": rho_option}
    sections: ClassVar[dict[str, Any]] = {"sum": _parse_sum}
    engines: ClassVar[tuple[str, ...]] = ("spark",)  # the Arrow context has no sums stage

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.hi = spec.sections["sum"]["hi"]
        self.rho = rho_within(spec.epsilon, spec.delta, spec.options.get("rho"))
        sigma = smallest_sigma(self.rho, self.hi)
        self.noise = DiscreteGaussian(sigma=sigma, data_radius=spec.max_units * self.hi)
        if self.noise.zcdp_rho(self.hi) > self.rho:
            raise MechanismSpecError("internal error: the noise exceeds rho")

    def plan(self) -> dict[str, Any]:
        return {"mechanism": self.name, "rho": self.rho, "sigma": self.noise.sigma}

    def privacy_summary(self) -> dict[str, Any]:
        return {"rho": str(self.noise.zcdp_rho(self.hi))}

    def accuracy_summary(self) -> dict[str, Any]:
        return {}

    def stages(self) -> list[Any]:
        from dpspark.mechanisms.base import StageInfo

        return [StageInfo("sums", "one clipped sum", stage=SumsStage)]

    def run(self, backend: Any, rng: Any, progress: Any) -> StatementRelease:
        stage = SumsStage((self.spec.sections["sum"]["column"],), (0,), (self.hi,), 0, self.spec.unit_column,
                          self.spec.max_units)
        total = backend.compute(stage)[0][f"sum_{stage.columns[0]}"]
        noisy = self.noise.add(total, rng)
        primary = self.noise.statement([self.hi], self.spec.max_units)
        return StatementRelease(
            algorithm="ToyDGaussSum (test only)",
            parameters=self.plan(),
            privacy=standard_statements(primary, delta=self.spec.delta),
            accuracy=AccuracyStatement([AccuracyClaim("abs_error", 10 * self.noise.sigma, "1/1000", "per_query")]),
            section={"answer": noisy},
            tables={"answers": pa.table({"name": ["total"], "value": [noisy]})},
        )


def register() -> None:
    """The registry entries: mechanism, writer (the generic one) and reader (the generic base)."""
    from dpspark.lookup.readers import register_reader
    from dpspark.lookup.statement_base import StatementLookup
    from dpspark.mechanisms.registry import register as add
    from dpspark.release.writers import register_writer
    from dpspark.release.statement_envelope import write_statement_release

    add(ToyDGaussSum)
    register_writer(KIND, write_statement_release)
    register_reader(KIND, StatementLookup)
