"""A test-only family in the shape of ``dpspark/mechanisms/<family>/``: mechanisms and a release kind.

``mechanism.py`` holds the Mechanism classes; ``family.py`` declares the family once (its ``MECHANISMS`` and
its ``KINDS``: section, writer, section codec, reader as "module:attr" strings); ``section.py`` and
``reader.py`` are its codec.
:func:`register` adds the folder at runtime with one call (``register_family``); :func:`unregister` removes it.
"""

from __future__ import annotations

FAMILY = "tests.support.plugins.toy.family"


def register() -> None:
    """Register the family folder: its mechanisms and its release kind (one call, as any plugin does)."""
    from dpspark.mechanisms.registry import register_family

    register_family(FAMILY)


def unregister() -> None:
    """Remove what :func:`register` added."""
    from dpspark.mechanisms.registry import unregister_family

    unregister_family(FAMILY)
