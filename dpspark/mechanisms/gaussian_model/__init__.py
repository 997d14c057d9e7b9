"""Private Gaussian learners (family ``gaussian_model``): KLSU-structured covariance and mean with CoinPress steps, under zCDP.

* :mod:`.covariance`, :mod:`.mean` - the algorithms, driver side, over a :class:`GaussianSource` port
  (:mod:`.source`: ``ArraySource`` in memory; the Spark source in :mod:`.spark_pairs`);
* :mod:`.fixed`, :mod:`.exactops`, :mod:`.model_noise` - exact fixed-point pieces and the certified noise;
* :mod:`.sample_size` - the stated sample-size bound; :mod:`.mechanism` - the registered mechanisms;
* :mod:`.family` (declaration), :mod:`.section`, :mod:`.reader` - the ``gaussian_model`` release kind.
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "ArraySource": "source",
    "GaussianCovariance": "mechanism",
    "GaussianLearner": "mechanism",
    "GaussianMean": "mechanism",
    "GaussianSource": "source",
    "covariance_rounds": "covariance",
    "fine_mean": "mean",
    "learn_in_memory": "mechanism",
    "learn_on": "mechanism",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = sorted(_NAMES)
