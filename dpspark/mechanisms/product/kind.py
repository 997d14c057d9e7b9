"""The product family's release kind ``distribution``: a learned product distribution (strings only, imported on use)."""

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
