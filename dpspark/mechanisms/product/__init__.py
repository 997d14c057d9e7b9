"""Private product distributions over d binary columns: RSSS Alg 4 (sampler) and KLSU Alg 7 (learner).

* :mod:`dpspark.mechanisms.product.rounds` - the exact pieces both share: ceilings (Bernstein, or Chernoff's
  tail expectation), per-group truncation, the noisy unit count, each round's certified rho;
* :mod:`dpspark.mechanisms.product.ladder` - the bucketing rounds both run on one set of units, and the
  grouping of buckets (each group at its own ceiling and budget) in a final round;
* :mod:`dpspark.mechanisms.product.sampler` - RSSS Algorithm 4 (Thm 5.1 => Thm 1.6): one private sample;
* :mod:`dpspark.mechanisms.product.learner` - KLSU PPDE Algorithm 7 (Thm 5.2): q in [0,1]^d as exact rationals.

Every estimate divides by a noisy count of the units it reads, never by max_units (an upper bound only).
Both run driver-side over an *aggregate oracle* (a function from a public :class:`~dpspark.mechanisms.product.rounds.RoundQuery`
to exact integer sums), so the same code runs on in-memory rows (tests), on simulated counts (benchmarks),
on Arrow and on Spark (the mechanisms in :mod:`dpspark.mechanisms.product.mechanism`).
"""
