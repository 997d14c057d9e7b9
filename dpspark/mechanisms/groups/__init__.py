"""Grouped aggregates (issue 22): count, sum, mean, variance and quantiles per group, driver side.

The engine computes exact per-group sufficient statistics (plain ints, :mod:`.stats`); this package turns
them into the noisy release with exact privacy and error-bar statements (docs/groups.md §A):

* :mod:`.aggregates` - the aggregate specs and their per-unit sensitivities;
* :mod:`.noise_choice` - the integer noise per aggregate (pure, zCDP, bounded) and the budget split;
* :mod:`.quantile` - the exact exponential mechanism over a public grid;
* :mod:`.selection` - private key selection (the optimal thresholding law, exact delta);
* :mod:`.algorithm` - :func:`plan_groups` (data-free) and :func:`release_groups` (the noisy values).
"""
