"""The answers family, declared once: its mechanisms and its release kind ``answers`` (exact noisy answers).

This module is what :data:`dpspark.release.kinds.FAMILIES` names for the family: the mechanism registry
reads :data:`MECHANISMS`, the kind registry :data:`KINDS`. Strings only, so reading a release imports
nothing more of the family than its codec.
"""

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

#: mechanism name (the config's ``privacy.mechanism``) -> its class, imported on first use
MECHANISMS = {
    "bounded_noise": "dpspark.mechanisms.answers.mechanism:BoundedNoiseAnswers",
    "gaussian": "dpspark.mechanisms.answers.mechanism:GaussianAnswers",
}

#: what "more than n units" means for these mechanisms, in the words the dry run (``excess_units_text``) and
#: ``dpspark inspect`` both print: sums are clipped per unit and never truncated (n sets the fixed-point
#: capacity check only), whatever ``on_excess_units`` says; so ``max_units`` is optional for them
#: (``units_optional``: without it n is the fixed cap :data:`dpspark.privacy.relations.UNITS_CAP`)
EXCESS_UNITS = {
    "bounded_noise": "none removed (each unit's total is clipped per query; the guarantee does not depend on n)",
    "gaussian": ("none removed (each unit's total is clipped per query; the guarantee does not depend on n); an "
                 "answer beyond +-n x its clip bound (n: max_units, or the fixed cap 2^40 without it; possible only "
                 "with more than n units) is released at that edge of the noise window"),
}
