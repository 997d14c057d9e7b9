"""The CompactHistogram release object and how a reader recomputes G from its parameters.

A reader needs: the coefficient array ((l, m/64) uint64, little-endian words,
ascending degree), m and the modulus (``dpspark.gf.modulus_int(m)``), the
counting mechanism's exact parameters (n, exp_eps = {num, den}, gamma, t, or
GeoSample) and the sampler kind. :func:`rebuild_sampler` recomputes M and G
from ``parameters`` and checks d, so lookups need nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.mechanisms.compact.evaluation import evaluate, lookup
from dpspark.mechanisms.compact.parameters import make_sampler
from dpspark.mechanisms.compact.privacy import CompactPrivacy
from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.noise import CountingMechanism, FastSample, GeoSample
from dpspark.gf import GF2m
from dpspark.mechanisms.histogram.result import AccuracyStatement, PrivacyStatement


def mechanism_parameters(mechanism: CountingMechanism) -> dict[str, Any]:
    """Exact parameters to rebuild M (JSON-ready; big ints as hex)."""
    if isinstance(mechanism, FastSample):
        return {
            "mechanism": "FastSample",
            "n": mechanism.n,
            "exp_eps": {"num": mechanism.p, "den": mechanism.q},
            "gamma": {"num": 1, "den": mechanism.g},
            "t_star": mechanism.t_star,
            "t": mechanism.t,
            "fallback": None if mechanism.fallback is None else "GeoSample",
            "d": hex(mechanism.d),
        }
    if isinstance(mechanism, GeoSample):
        return {
            "mechanism": "GeoSample",
            "n": mechanism.n,
            "exp_eps": {"num": mechanism.p, "den": mechanism.q},
            "d": hex(mechanism.d),
        }
    raise TypeError("only FastSample and GeoSample have a rebuildable parameter form")


def rebuild_mechanism(params: dict[str, Any]) -> CountingMechanism:
    """M from :func:`mechanism_parameters`; raises ValueError if the recomputed d differs."""
    exp_eps = Fraction(int(params["exp_eps"]["num"]), int(params["exp_eps"]["den"]))
    mech: CountingMechanism
    if params["mechanism"] == "FastSample":
        gamma = Fraction(int(params["gamma"]["num"]), int(params["gamma"]["den"]))
        mech = FastSample(n=int(params["n"]), gamma=gamma, exp_eps=exp_eps)
        if mech.t != int(params["t"]):
            raise ValueError("recomputed FastSample t differs from the release's")
    elif params["mechanism"] == "GeoSample":
        mech = GeoSample(n=int(params["n"]), exp_eps=exp_eps)
    else:
        raise ValueError("unknown mechanism")
    if mech.d != int(params["d"], 16):
        raise ValueError("recomputed d differs from the release's")
    return mech


def rebuild_sampler(parameters: dict[str, Any]) -> EmptyBinSampler:
    """G from a release's ``parameters`` (keys "mechanism", "m", "sampler": {"kind": ...})."""
    mech = rebuild_mechanism(parameters["mechanism"])
    return make_sampler(mech, int(parameters["m"]), parameters["sampler"]["kind"])


@dataclass(frozen=True)
class CompactRelease:
    """A CompactHistogram (BV Algorithm 8.2): a degree <= n polynomial over GF(2^m) and its statements.

    h(x) = G(iota(p(phi(x)))) for every 0-based index x in [0, |X|);
    ``coefficients[i]`` is the coefficient of z^i. ``parameters`` is exact and
    JSON-ready: m, modulus (hex), ell, n, universe_size, the mechanism's
    parameters (:func:`mechanism_parameters`), the sampler's (kind, d, and for
    "block" the block/rem of Alg 8.5), epsilon2 and beta.
    """

    coefficients: np.ndarray
    m: int
    modulus: int
    ell: int
    n: int
    universe_size: int
    mechanism: CountingMechanism
    sampler: EmptyBinSampler
    privacy: PrivacyStatement
    privacy_detail: CompactPrivacy
    accuracy: AccuracyStatement
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def field(self) -> GF2m:
        """The GF(2^m) handle."""
        return GF2m(self.m)

    def lookup(self, indexes: Sequence[int]) -> list[int]:
        """Released counts for 0-based universe indexes."""
        idx = [int(i) for i in indexes]
        if any(not 0 <= i < self.universe_size for i in idx):
            raise ValueError("an index lies outside [0, |X|)")
        return lookup(self.field, self.coefficients, self.sampler, idx)

    def field_values(self, indexes: Sequence[int]) -> list[int]:
        """iota(p(phi(x))) in [1, 2^m] for each index (before G)."""
        return evaluate(self.field, self.coefficients, indexes)

    def describe(self) -> dict[str, Any]:
        """Everything but the coefficients: sizes, exact parameters, privacy, accuracy."""
        return {
            "algorithm": "CompactHistogram",
            "universe_size": self.universe_size,
            "n": self.n,
            "ell": self.ell,
            "m": self.m,
            "modulus": hex(self.modulus),
            "parameters": self.parameters,
            "privacy": self.privacy.describe(),
            "privacy_detail": self.privacy_detail.describe(),
            "accuracy": self.accuracy.describe(),
        }
