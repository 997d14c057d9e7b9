"""The compact family's release kind ``compact``: a polynomial over GF(2^m) (strings only, imported on use)."""

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
