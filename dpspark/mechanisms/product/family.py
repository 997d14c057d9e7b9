"""The product family, declared once: its mechanisms and its release kind ``distribution`` (a learned product distribution).

This module is what :data:`dpspark.release.kinds.FAMILIES` names for the family: the mechanism registry
reads :data:`MECHANISMS`, the kind registry :data:`KINDS`. Strings only, so reading a release imports
nothing more of the family than its codec.
"""

from dpspark.release.kinds import ReleaseKind

KINDS = (
    ReleaseKind(
        name="distribution",
        form="statements",
        section="section",
        codec="dpspark.mechanisms.product.section:check_kind",
        reader="dpspark.mechanisms.product.reader:DistributionLookup",
    ),
)

#: mechanism name (the config's ``privacy.mechanism``) -> its class, imported on first use
MECHANISMS = {
    "product_sampler": "dpspark.mechanisms.product.mechanism:ProductSampler",
    "product_learner": "dpspark.mechanisms.product.mechanism:ProductLearner",
}

#: what ``on_excess_units = "truncate"`` means here (the dry run and ``dpspark inspect`` both say it): no unit is
#: removed; the estimates divide by noisy counts of the units read, so max_units bounds, never scales, them
EXCESS_UNITS = {name: ("none removed (every unit is read; estimates divide by a noisy count of the units, not by "
                       "max_units; the accuracy claim assumes at most max_units)") for name in MECHANISMS}
