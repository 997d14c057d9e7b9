"""Mechanism names -> classes. The only place that maps a config's ``privacy.mechanism`` to code.

Built-in mechanisms are imported lazily (the lookup library never pays for them); tests and plugins
add their own with :func:`register`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpspark._lazy import LazyRegistry
from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.mechanisms.base import Mechanism

class UnknownMechanismError(DPSparkError, ValueError):
    """``privacy.mechanism`` names no registered mechanism."""


_MECHANISMS = LazyRegistry(
    {
        "dense": "dpspark.mechanisms.histogram.mechanism:DenseHistogram",
        "stability": "dpspark.mechanisms.histogram.mechanism:StabilityHistogram",
        "pure_sparse": "dpspark.mechanisms.histogram.mechanism:PureSparseHistogram",
        "compact": "dpspark.mechanisms.compact.mechanism:CompactHistogram",
        "bounded_noise": "dpspark.mechanisms.answers.mechanism:BoundedNoiseAnswers",
        "gaussian": "dpspark.mechanisms.answers.mechanism:GaussianAnswers",
        "kary_sampler": "dpspark.mechanisms.samplers.mechanism:KarySampler",
        "bernoulli_sampler": "dpspark.mechanisms.samplers.mechanism:BernoulliSampler",
        "product_sampler": "dpspark.mechanisms.product.mechanism:ProductSampler",
        "product_learner": "dpspark.mechanisms.product.mechanism:ProductLearner",
        "gaussian_covariance": "dpspark.mechanisms.gaussian_model.mechanism:GaussianCovariance",
        "gaussian_mean": "dpspark.mechanisms.gaussian_model.mechanism:GaussianMean",
        "gaussian_learner": "dpspark.mechanisms.gaussian_model.mechanism:GaussianLearner",
    },
    lambda name: UnknownMechanismError(f"privacy.mechanism must be one of {names()}, got {name!r}"),
)


def register(cls: type["Mechanism"]) -> type["Mechanism"]:
    """Register a mechanism class under ``cls.name`` (usable as a class decorator)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError("a mechanism class needs a non-empty string 'name'")
    _MECHANISMS.register(name, cls)
    return cls


def unregister(name: str) -> None:
    """Remove a mechanism registered with :func:`register` (tests)."""
    _MECHANISMS.unregister(name)


def names() -> tuple[str, ...]:
    """Every available mechanism name, sorted."""
    return _MECHANISMS.names()


def mechanism_class(name: str) -> type["Mechanism"]:
    """The class registered under ``name``; :class:`UnknownMechanismError` names the choices."""
    return _MECHANISMS.get(name)


def construct(spec: Any) -> "Mechanism":
    """The mechanism ``spec`` names, built from it (its plan certified on construction).

    The release path builds it once per release, in its plan (:func:`dpspark.engine.plan.build_mechanism`).
    """
    return mechanism_class(spec.mechanism)(spec)
