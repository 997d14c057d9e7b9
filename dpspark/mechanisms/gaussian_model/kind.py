"""The gaussian_model family's release kind ``gaussian_model``: a private Gaussian (strings only, imported on use)."""

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
