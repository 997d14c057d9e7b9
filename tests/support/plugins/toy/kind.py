"""The toy family's release kind, declared once (strings only): what a family folder adds to the one registry."""

from dpspark.release.kinds import ReleaseKind

KIND = "toy_statement"

KINDS = (
    ReleaseKind(
        name=KIND,
        form="statements",
        section="section",
        codec="tests.support.plugins.toy.section:check_toy_section",
        reader="tests.support.plugins.toy.reader:ToyLookup",
    ),
)
