"""A test-only family in the shape of ``dpspark/mechanisms/<family>/``: mechanisms and a release kind.

``mechanism.py`` holds the Mechanism classes; ``kind.py`` declares the family's release kind once (section,
writer, section codec, reader as "module:attr" strings); ``section.py`` and ``reader.py`` are its codec.
:func:`register` adds them at runtime through the two registries a plugin uses (mechanisms and kinds);
:func:`unregister` removes them.
"""

from __future__ import annotations

MECHANISMS = ("toy_geometric", "toy_dgauss_sum")


def register() -> None:
    """Register the family's mechanisms and its release kind."""
    from dpspark.mechanisms.registry import register as add
    from dpspark.release.kinds import register_kind
    from tests.support.plugins.toy.kind import KINDS
    from tests.support.plugins.toy.mechanism import ToyDGaussSum, ToyGeometric

    add(ToyGeometric)
    add(ToyDGaussSum)
    for kind in KINDS:
        register_kind(kind)


def unregister() -> None:
    """Remove what :func:`register` added."""
    from dpspark.mechanisms.registry import unregister as remove
    from dpspark.release.kinds import unregister_kind
    from tests.support.plugins.toy.kind import KINDS

    for name in MECHANISMS:
        remove(name)
    for kind in KINDS:
        unregister_kind(kind.name)
