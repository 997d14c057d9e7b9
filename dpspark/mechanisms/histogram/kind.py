"""The histogram family's release kind ``sparse``: the bins of a partial vector (strings only, imported on use)."""

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
