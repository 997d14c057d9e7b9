"""Private samplers (Raskhodnikova-Sivakumar-Smith-Swanberg, RSSS): driver-side algorithms in exact arithmetic.

* :mod:`dpspark.mechanisms.samplers.kary` - RSSS Algorithm 3 (Thm 1.4): noisy histogram, clip, normalise, one draw;
* :mod:`dpspark.mechanisms.samplers.bernoulli` - RSSS Thm 6.1 and its product over d columns (Thms 6.4, 1.8);
* :mod:`dpspark.mechanisms.samplers.categorical` - exact inverse-CDF draw from integer weights (post-processing).
"""
