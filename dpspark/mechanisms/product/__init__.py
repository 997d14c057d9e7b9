"""Private product distributions over d binary columns: RSSS Alg 4 (sampler) and KLSU Alg 7 (learner).

* :mod:`dpspark.mechanisms.product.rounds` - the exact pieces both share: ceilings from Bernstein's bound, per-record
  truncation, the per-round discrete Gaussian and its certified rho, the allocation of hash batches to rounds;
* :mod:`dpspark.mechanisms.product.sampler` - RSSS Algorithm 4 (Thm 5.1 => Thm 1.6): one private sample;
* :mod:`dpspark.mechanisms.product.learner` - KLSU PPDE Algorithm 7 (Thm 5.2): q in [0,1]^d as exact rationals.

Both run driver-side over an *aggregate oracle* (a function from a public :class:`~dpspark.mechanisms.product.rounds.RoundQuery`
to exact integer sums), so the same code runs on in-memory rows (tests), on simulated counts (benchmarks)
and on Spark (the mechanisms in :mod:`dpspark.mechanisms.product.mechanism`).
"""
