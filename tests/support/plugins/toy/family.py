"""The toy family, declared once (strings only): its mechanisms and its release kind, as every family folder does."""

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

#: mechanism name -> class ("module:Class", imported when the family is registered)
MECHANISMS = {
    "toy_geometric": "tests.support.plugins.toy.mechanism:ToyGeometric",
    "toy_dgauss_sum": "tests.support.plugins.toy.mechanism:ToyDGaussSum",
}
