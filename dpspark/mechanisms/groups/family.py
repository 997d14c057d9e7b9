"""The groups family, declared once: its mechanism and its release kind ``groups`` (aggregates per group).

This module is what :data:`dpspark.release.kinds.FAMILIES` names for the family. Strings only, so reading a
release imports nothing more of the family than its codec and reader.
"""

from dpspark.release.kinds import ReleaseKind

KINDS = (
    ReleaseKind(
        name="groups",
        form="statements",
        section="section",
        codec="dpspark.mechanisms.groups.section:check_kind",
        reader="dpspark.mechanisms.groups.reader:GroupsLookup",
    ),
    ReleaseKind(  # the same table and reader; its codec checks the pure mechanism's manifest (docs/groups.md §H)
        name="pure_groups",
        form="statements",
        section="section",
        codec="dpspark.mechanisms.groups.pure_section:check_kind",
        reader="dpspark.mechanisms.groups.reader:GroupsLookup",
    ),
)

#: mechanism name (the config's ``privacy.mechanism``) -> its class, imported on first use
MECHANISMS = {
    "groups": "dpspark.mechanisms.groups.mechanism:GroupsMechanism",
    "pure_groups": "dpspark.mechanisms.groups.pure_keys:PureGroupsMechanism",
}
