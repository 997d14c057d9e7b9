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
