"""Generators for post-processing a released model (``sample(k, rng)``): any generator the user has will do.

Synthetic rows drawn from a released distribution or Gaussian model are post-processing of the release: their
privacy does not depend on the generator. ``rng`` may be None (the CSPRNG, :func:`dpspark.rng.default_source`),
an int seed, a :class:`random.Random`, a numpy :class:`~numpy.random.Generator` (or legacy ``RandomState``) or a
:class:`dpspark.rng.RandomSource`. Noise of a release never comes from here: mechanisms draw only from
:mod:`dpspark.rng`.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

__all__ = ["BitsFromNumpy", "BitsFromRandom", "bits_source", "numpy_generator"]

#: what ``rng`` may be, for error messages
ACCEPTED = "None, an int seed, a random.Random, a numpy Generator or a dpspark.rng.RandomSource"


class BitsFromRandom:
    """``bits(n)`` from a :class:`random.Random` (post-processing only)."""

    def __init__(self, gen: random.Random) -> None:
        self.gen = gen

    def bits(self, n: int) -> int:
        """n uniform bits as an int in [0, 2^n)."""
        return self.gen.getrandbits(n) if n > 0 else 0


class BitsFromNumpy:
    """``bits(n)`` from a numpy Generator or RandomState (post-processing only)."""

    def __init__(self, gen: Any) -> None:
        self.gen = gen

    def bits(self, n: int) -> int:
        """n uniform bits as an int in [0, 2^n)."""
        if n <= 0:
            return 0
        nbytes = (n + 7) // 8
        return int.from_bytes(self.gen.bytes(nbytes), "big") >> (8 * nbytes - n)


def _check(rng: Any) -> None:
    if isinstance(rng, bool) or isinstance(rng, float):
        raise TypeError(f"rng must be {ACCEPTED}; got {type(rng).__name__}")


def bits_source(rng: Any) -> Any:
    """An object with ``bits(n)`` for ``rng`` (see the module docstring); an int seeds numpy's default generator."""
    _check(rng)
    if rng is None:
        from dpspark.rng import default_source

        return default_source()
    if isinstance(rng, int):
        return BitsFromNumpy(np.random.default_rng(rng))
    if isinstance(rng, random.Random):
        return BitsFromRandom(rng)
    if isinstance(rng, (np.random.Generator, np.random.RandomState)):
        return BitsFromNumpy(rng)
    if callable(getattr(rng, "bits", None)):
        return rng
    raise TypeError(f"rng must be {ACCEPTED}; got {type(rng).__name__}")


def numpy_generator(rng: Any) -> np.random.Generator:
    """A numpy Generator for ``rng``: itself, one seeded by the int, or one seeded with 128 bits drawn from it."""
    _check(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, int) and rng is not None:
        return np.random.default_rng(rng)
    return np.random.default_rng(bits_source(rng).bits(128))
