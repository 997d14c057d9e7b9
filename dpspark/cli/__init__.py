"""The ``dpspark`` command: one module per command (:mod:`.app` parses and dispatches).

``release`` (:mod:`.app`), ``lookup`` (:mod:`.lookup`), ``inspect`` (:mod:`.inspect`), ``plot``
(:mod:`.plot`), ``verify``/``keygen``/``sign`` (:mod:`.verify`, :mod:`.keygen`, :mod:`.sign`), ``budget``
(:mod:`.budget`, the ledger) and ``calibrate`` (:mod:`.calibrate`); :mod:`.common` holds their shared parts.
"""

from dpspark.cli.app import main

__all__ = ["main"]
