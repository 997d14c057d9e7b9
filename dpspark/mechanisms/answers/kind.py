"""The answers family's release kind ``answers``: exact noisy answers (strings only, imported on use)."""

from dpspark.release.kinds import ReleaseKind

KINDS = (
    ReleaseKind(
        name="answers",
        form="statements",
        section="section",
        codec="dpspark.mechanisms.answers.section:check_kind",
        reader="dpspark.mechanisms.answers.reader:AnswersLookup",
    ),
)
