"""Reader of release kind "distribution": a learned product distribution q in [0,1]^d (KLSU PPDE).

Section format::

    {"q": ["a/b", ...], "columns": [...], "flipped": [bool, ...]}

``q[j]`` is the exact probability that column j is 1; ``flipped`` records which columns the algorithm
oriented (public, post-processing of its first noisy round). Drawing synthetic rows from q
(:meth:`DistributionLookup.sample`) is post-processing of the release: it costs no privacy, however many
rows are drawn.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpspark.lookup.statement_base import StatementLookup, section_keys_and_columns
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.exactjson import str_to_frac
from dpspark.mechanisms.product.section import KIND, _fraction, check_distribution_section  # noqa: F401

if TYPE_CHECKING:
    from dpspark.rng import RandomSource


def bernoulli_matrix(q: list[Fraction], k: int, rng: "RandomSource") -> np.ndarray:
    """k rows, column j ~ Ber(q_j) exactly: a 64-bit uniform against floor(q 2^64), ties broken by more bits."""
    d = len(q)
    out = np.zeros((k, d), dtype=np.uint8)
    if k == 0 or d == 0:
        return out
    raw = np.frombuffer(rng.bits(64 * k * d).to_bytes(8 * k * d, "big"), dtype=">u8").reshape(k, d)
    for j, p in enumerate(q):
        t = (p.numerator << 64) // p.denominator  # floor(q 2^64), in [0, 2^64]
        if t >= 1 << 64:
            out[:, j] = 1
            continue
        col = raw[:, j].astype(np.uint64)
        out[:, j] = col < np.uint64(t)
        for i in np.nonzero(col == np.uint64(t))[0]:  # U = t: the bit is 1 w.p. frac(q 2^64); rare (2^-64)
            rest = Fraction(p.numerator << 64, p.denominator) - t
            more = 64
            u = rng.bits(more)
            out[i, j] = int(Fraction(u, 1 << more) < rest)  # post-processing: 2^-128 resolution is ample
    return out


class DistributionLookup(StatementLookup):
    """An opened "distribution" release: :attr:`q` (exact), :meth:`probabilities`, :meth:`sample`."""

    @property
    def q(self) -> list[Fraction]:
        """q_j = Pr[column j is 1] under the released product distribution, exact."""
        return [_fraction(x) for x in self.section["q"]]

    @property
    def columns(self) -> list[str]:
        """The columns, in the order of q."""
        return list(self.section["columns"])

    def probabilities(self) -> np.ndarray:
        """q as float64 (for plots and reports; the exact values are :attr:`q`)."""
        return np.array([float(x) for x in self.q], dtype=np.float64)  # report

    def sample(self, k: int, rng: Any = None) -> np.ndarray:
        """k synthetic rows (uint8, k x d) drawn i.i.d. from the released product distribution.

        Post-processing of the release: free of privacy cost, whatever k is, and private whatever the
        generator. ``rng``: None (the CSPRNG), an int seed, a :class:`random.Random`, a numpy
        :class:`~numpy.random.Generator` or a :class:`dpspark.rng.RandomSource` (tests pass a SeededRandom).
        """
        from dpspark.lookup.generators import bits_source

        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError("k must be an int >= 0")
        return bernoulli_matrix(self.q, k, bits_source(rng))

    def to_pandas(self) -> Any:
        """One row per column: ``column``, ``q`` (Pr[column = 1], a float for reading), ``q_exact`` (the exact
        rational as "p/q") and ``flipped`` (the algorithm oriented the column; public post-processing)."""
        import pandas as pd

        from dpspark.lookup.frames import exact_columns

        return pd.DataFrame({"column": self.columns, **exact_columns("q", self.q),
                             "flipped": [bool(f) for f in self.section.get("flipped", [False] * len(self.q))]})

    def describe_lines(self) -> list[tuple[str, str]]:
        """``dpspark inspect`` lines: the columns, q (first 10, as decimals) and the free-sampling note."""
        q = self.q
        shown = ", ".join(f"{c}={float(x):.4g}" for c, x in zip(self.columns, q[:10]))  # report
        more = f", ... ({len(q)} in all)" if len(q) > 10 else ""
        return [
            ("columns", f"{len(q)} binary columns"),
            ("q", shown + more),
            ("synthetic rows", "sample(k, rng) draws rows from q: post-processing, no privacy cost"),
        ]
