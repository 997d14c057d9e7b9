"""The histogram family, declared once: its mechanisms and its release kind ``sparse`` (the bins of a partial vector).

This module is what :data:`dpspark.release.kinds.FAMILIES` names for the family: the mechanism registry
reads :data:`MECHANISMS`, the kind registry :data:`KINDS`. Strings only, so reading a release imports
nothing more of the family than its codec.
"""

from dpspark.release.kinds import ReleaseKind

KINDS = (
    ReleaseKind(
        name="sparse",
        form="counts",
        section="bins",
        writer="dpspark.mechanisms.histogram.writer:write_sparse_release",
        codec="dpspark.mechanisms.histogram.section:parse_bins_section",
        reader="dpspark.mechanisms.histogram.reader:ReleaseLookup",
        plan_check="dpspark.mechanisms.histogram.section:check_sparse_plan",
    ),
)

#: mechanism name (the config's ``privacy.mechanism``) -> its class, imported on first use
MECHANISMS = {
    "dense": "dpspark.mechanisms.histogram.mechanism:DenseHistogram",
    "stability": "dpspark.mechanisms.histogram.mechanism:StabilityHistogram",
    "pure_sparse": "dpspark.mechanisms.histogram.mechanism:PureSparseHistogram",
}
