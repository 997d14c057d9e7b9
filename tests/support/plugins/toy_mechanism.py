"""A test-only mechanism: one module plus one ``register`` call, with no edit to the engine.

``toy_geometric`` releases a GeoSample-noised count for every bin of a small universe (BasicHistogram,
BV Algorithm 5.1 / Thm 5.2, pure DP under add/remove), with its own parameter policy: e^eps~ = p/q with
a fixed denominator 16. It stores its payload as a ``sparse`` release, so the writer, reader, lookup and
CLI need nothing new.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, ClassVar

from dpspark.noise.counting import GeoSample
from dpspark.noise.exp_eps import exp_eps_at_most
from dpspark.mechanisms.histogram.basic import basic_histogram
from dpspark.mechanisms.base import Mechanism, MechanismSpecError
from dpspark.mechanisms.histogram.mechanism import within_epsilon
from dpspark.rng import bias_epsilon


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


def register() -> None:
    """The registry entry."""
    from dpspark.mechanisms.registry import register as add

    add(ToyGeometric)


__all__ = ["Fraction", "ToyGeometric", "register"]
