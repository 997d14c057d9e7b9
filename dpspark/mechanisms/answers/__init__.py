"""Scalar answers (family ``answers``): counts, clipped sums and means with bounded noise (Dagan-Kur: every
answer within R of the truth with probability 1) or discrete Gaussian noise (zCDP).

* :mod:`.queries` - the query grammar (count, sum, mean; filters) and its scalars;
* :mod:`.plan` - the data-free noise plan; :mod:`.mechanism` - ``bounded_noise`` and ``gaussian``;
* :mod:`.arrow_kernel`, :mod:`.spark_kernel` - the per-query totals on each engine, both by
  :mod:`.arrow_totals` (exact per-batch sums) and :mod:`.arrow_masks` (filters), Spark inside ``mapInArrow``
  (:mod:`.spark_arrow`);
* :mod:`.family` (declaration), :mod:`.section`, :mod:`.reader` - the ``answers`` release kind.
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "AnswersMechanism": "mechanism",
    "BoundedNoiseAnswers": "mechanism",
    "GaussianAnswers": "mechanism",
    "Query": "queries",
    "QueryError": "queries",
    "parse_queries": "queries",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = sorted(_NAMES)
