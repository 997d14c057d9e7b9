"""The toy family's mechanisms: a test-only family folder, registered from the suite with no edit to dpspark.

* ``toy_geometric`` releases a GeoSample-noised count for every bin of a small universe (BasicHistogram,
  BV Algorithm 5.1 / Thm 5.2, pure DP under add/remove), with its own parameter policy: e^eps~ = p/q with a
  fixed denominator 16. It stores its payload as a ``sparse`` release, so the writer, reader, lookup and CLI
  need nothing new.
* ``toy_dgauss_sum`` sums a column clipped to [0, hi] (one pass, exact) and adds discrete Gaussian noise
  with sigma the smallest grid value whose certified rho fits the (epsilon, delta) budget: rho =
  rho(hi)-zCDP under add/remove (Canonne-Kamath-Steinke 2020, with the certificate of the implemented
  law), stated with its CKS20 (eps, delta) conversions. It writes the family's own release kind
  ``toy_statement`` (``kind.py``: the generic statements writer, the section check in ``section.py``, the
  reader in ``reader.py``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, ClassVar

import pyarrow as pa

from dpspark.engine.stages import SumsStage
from dpspark.mechanisms.base import Mechanism, MechanismSpecError
from dpspark.mechanisms.histogram.basic import basic_histogram
from dpspark.exact import within_epsilon
from dpspark.mechanisms.zcdp_budget import rho_option, rho_within
from dpspark.noise import GeoSample
from dpspark.noise.dgauss import DiscreteGaussian, smallest_sigma
from dpspark.noise.exp_eps import exp_eps_at_most
from dpspark.privacy import AccuracyClaim, AccuracyStatement
from dpspark.release.statements import StatementRelease, standard_statements
from dpspark.rng import bias_epsilon
from tests.support.plugins.toy.family import KIND


class ToyGeometric(Mechanism):
    """GeoSample on every bin of a universe of at most 1000 keys (pure eps-DP, BV Thm 5.2)."""

    name: ClassVar[str] = "toy_geometric"
    release_kind: ClassVar[str] = "sparse"

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        if spec.universe.size > 1000:
            raise MechanismSpecError("toy_geometric releases every bin: at most 1000 keys")
        self.counting = GeoSample(n=spec.max_units, exp_eps=exp_eps_at_most(spec.epsilon, 16))
        if not within_epsilon(self.counting.exp_eps, bias_epsilon(1), spec.epsilon):
            raise MechanismSpecError("internal error: the plan exceeds epsilon")

    def plan(self) -> dict[str, Any]:
        return {"mechanism": self.name, "counting": self.counting.describe()}

    def privacy_summary(self) -> dict[str, Any]:
        return {"epsilon": f"ln({self.counting.exp_eps}) + 2^-126", "delta": "0"}

    def accuracy_summary(self) -> dict[str, Any]:
        return {"per_query_error_bar": self.counting.accuracy(self.spec.beta), "beta": str(self.spec.beta)}

    def run(self, backend: Any, rng: Any, progress: Any) -> Any:
        from dpspark.engine.stages import CountsStage

        indices, counts = backend.compute(CountsStage.from_spec(self.spec))
        size = self.spec.universe.size
        return basic_histogram((indices, counts), range(size), size, self.spec.max_units, self.counting, rng,
                               beta=self.spec.beta)


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


__all__ = ["Fraction", "ToyDGaussSum", "ToyGeometric"]
