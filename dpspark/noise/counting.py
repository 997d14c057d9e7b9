"""Counting mechanisms M(c, u) of Balcer-Vadhan section 4, in exact integer arithmetic."""

from dpspark.noise.counting_base import CountingMechanism
from dpspark.noise.exp_eps import choose_exp_eps, exp_eps_at_most
from dpspark.noise.fastsample import FastSample, parse_gamma, tight_t, truncation_condition
from dpspark.noise.geosample import GeoSample

__all__ = [
    "CountingMechanism",
    "FastSample",
    "GeoSample",
    "choose_exp_eps",
    "exp_eps_at_most",
    "parse_gamma",
    "tight_t",
    "truncation_condition",
]
