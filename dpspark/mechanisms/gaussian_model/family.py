"""The gaussian_model family, declared once: its mechanisms and its release kind ``gaussian_model`` (a private Gaussian).

This module is what :data:`dpspark.release.kinds.FAMILIES` names for the family: the mechanism registry
reads :data:`MECHANISMS`, the kind registry :data:`KINDS`. Strings only, so reading a release imports
nothing more of the family than its codec.
"""

from dpspark.release.kinds import ReleaseKind

KINDS = (
    ReleaseKind(
        name="gaussian_model",
        form="statements",
        section="section",
        codec="dpspark.mechanisms.gaussian_model.section:check_kind",
        reader="dpspark.mechanisms.gaussian_model.reader:GaussianModelLookup",
    ),
)

#: mechanism name (the config's ``privacy.mechanism``) -> its class, imported on first use
MECHANISMS = {
    "gaussian_covariance": "dpspark.mechanisms.gaussian_model.mechanism:GaussianCovariance",
    "gaussian_mean": "dpspark.mechanisms.gaussian_model.mechanism:GaussianMean",
    "gaussian_learner": "dpspark.mechanisms.gaussian_model.mechanism:GaussianLearner",
}

#: what ``on_excess_units = "truncate"`` means here (the dry run and ``dpspark inspect`` both say it): no unit is
#: removed; every single is read and the estimates divide by a noisy count of them, not by max_units
EXCESS_UNITS = {name: ("none removed (every single is read; estimates divide by a noisy count of the singles, not "
                       "by max_units; the accuracy claims assume at most max_units)") for name in MECHANISMS}
