"""Reader of release kind "distribution": a learned product distribution q in [0,1]^d (KLSU PPDE).

Section format::

    {"q": ["a/b", ...], "columns": [...], "flipped": [bool, ...], "error_bars": ["a/b", ...]}

``q[j]`` is the exact probability that column j is 1; ``flipped`` records which columns the algorithm
oriented (public, post-processing of its first noisy round: it estimated 1 - q for the columns more often
1 than 0); ``error_bars[j]`` bounds |q_j - f_j|, f_j the fraction of the units whose column j is 1, with
probability >= 1 - beta (releases before issue 36 have no error_bars). Drawing synthetic rows from q
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


#: what the flipped column means, where the user reads it (to_pandas().attrs, inspect, the notebook view)
FLIPPED_TEXT = ("the algorithm estimated Pr[column = 0] for these columns (more often 1 than 0, per its first "
                "noisy round) and released q = 1 - that: q is Pr[column = 1] for every column; bookkeeping only")


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

    @property
    def error_bars(self) -> list[Fraction] | None:
        """Per column, the exact bound on |q_j - f_j| at the release's beta (None in releases before issue 36)."""
        bars = self.section.get("error_bars")
        return None if bars is None else [_fraction(x) for x in bars]

    def _beta_text(self) -> str:
        from dpspark.text import confidence

        claims = [c for c in self.manifest.accuracy.claims if c.quantity == "abs_error" and c.scope == "per_query"]
        return f"(each at confidence >= {confidence(claims[0].beta)})" if claims else ""

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
        rational as "p/q"), ``error_bar`` / ``error_bar_exact`` (|q - f| <= it at the release's beta, f the
        column's frequency among the units; absent in releases before issue 36) and ``flipped`` (the algorithm
        estimated 1 - q for this column, one more often 1 than 0; q is Pr[column = 1] either way)."""
        import pandas as pd

        from dpspark.lookup.frames import exact_columns

        bars = self.error_bars
        cols: dict[str, Any] = {"column": self.columns, **exact_columns("q", self.q)}
        if bars is not None:
            cols.update(exact_columns("error_bar", bars))
        cols["flipped"] = [bool(f) for f in self.section.get("flipped", [False] * len(self.q))]
        frame = pd.DataFrame(cols)
        frame.attrs["flipped"] = FLIPPED_TEXT
        if bars is not None:
            frame.attrs["error_bar"] = f"|q - f| <= error_bar {self._beta_text()}, f the column's frequency among the units"
        return frame

    def describe_lines(self) -> list[tuple[str, str]]:
        """``dpspark inspect`` lines: the columns, q (first 10, as decimals) and the free-sampling note."""
        q = self.q
        shown = ", ".join(f"{c}={float(x):.4g}" for c, x in zip(self.columns, q[:10]))  # report
        more = f", ... ({len(q)} in all)" if len(q) > 10 else ""
        lines = [("columns", f"{len(q)} binary columns"), ("q", shown + more)]
        bars = self.error_bars
        if bars is not None:
            from dpspark.text import bound_text

            worst = bound_text(max(bars))
            worst = worst[2:] if worst.startswith("= ") else worst
            lines.append(("error bars", f"per column, |q - f| <= its error_bar (to_pandas()) {self._beta_text()}, "
                                        f"f the column's frequency among the units; the largest {worst}"))
        flips = [c for c, f in zip(self.columns, self.section.get("flipped", [])) if f]
        if flips:
            lines.append(("flipped", f"{', '.join(flips[:10])}{' ...' if len(flips) > 10 else ''}: {FLIPPED_TEXT}"))
        lines.append(("synthetic rows", "sample(k, rng) draws rows from q: post-processing, no privacy cost"))
        return lines
