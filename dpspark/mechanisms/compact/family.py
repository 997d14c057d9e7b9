"""The compact family, declared once: its mechanisms and its release kind ``compact`` (a polynomial over GF(2^m)).

This module is what :data:`dpspark.release.kinds.FAMILIES` names for the family: the mechanism registry
reads :data:`MECHANISMS`, the kind registry :data:`KINDS`. Strings only, so reading a release imports
nothing more of the family than its codec.
"""

from dpspark.release.kinds import ReleaseKind

KINDS = (
    ReleaseKind(
        name="compact",
        form="counts",
        section="compact",
        writer="dpspark.mechanisms.compact.writer:write_compact_release",
        codec="dpspark.mechanisms.compact.section:parse_compact_section",
        reader="dpspark.mechanisms.compact.reader:CompactReleaseLookup",
        plan_check="dpspark.mechanisms.compact.section:check_compact_plan",
        wide_bias=True,  # the bias holds the sampler's exact bound, whose denominator grows with d
    ),
)

#: mechanism name (the config's ``privacy.mechanism``) -> its class, imported on first use
MECHANISMS = {
    "compact": "dpspark.mechanisms.compact.mechanism:CompactHistogram",
}
