"""The samplers family, declared once: its mechanisms and its release kind ``sample`` (private samples, one per batch).

This module is what :data:`dpspark.release.kinds.FAMILIES` names for the family: the mechanism registry
reads :data:`MECHANISMS`, the kind registry :data:`KINDS`. Strings only, so reading a release imports
nothing more of the family than its codec.

The product family's sampler (``product_sampler``) writes this kind too.
"""

from dpspark.release.kinds import ReleaseKind

KINDS = (
    ReleaseKind(
        name="sample",
        form="statements",
        section="section",
        codec="dpspark.mechanisms.samplers.section:check_kind",
        reader="dpspark.mechanisms.samplers.reader:SampleLookup",
    ),
)

#: mechanism name (the config's ``privacy.mechanism``) -> its class, imported on first use
MECHANISMS = {
    "kary_sampler": "dpspark.mechanisms.samplers.mechanism:KarySampler",
    "bernoulli_sampler": "dpspark.mechanisms.samplers.mechanism:BernoulliSampler",
}

#: what ``on_excess_units = "truncate"`` means for these mechanisms, when it is not "keep n units by keyed hash"
#: (the dry run's ``excess_units_text`` and ``dpspark inspect`` print the same words)
EXCESS_UNITS = {"bernoulli_sampler": "none removed (each estimate divides by the batch's own unit count, at least n0)"}
