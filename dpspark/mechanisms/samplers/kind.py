"""The samplers family's release kind ``sample``: private samples, one per batch (strings only, imported on use).

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
