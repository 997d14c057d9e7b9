"""The release engine, which knows no family: a plain-data spec, declarative stages, backends that compute
them, and the runner.

* :mod:`.spec` - :class:`ReleaseSpec` (validated public parameters, never data);
* :mod:`.stages` - the generic stages and :class:`FamilyStage`, the base of a family's own stages;
* :mod:`.backend` - the :class:`Backend` protocol, :func:`open_backend`, :func:`supported_engines`
  (derived from the kernels of the stages a mechanism declares); :mod:`.spark` and :mod:`.arrow` implement it;
* :mod:`.plan` - :func:`plan_release`: the mechanism built and certified once, the engine, every data-free
  check; :mod:`.runner` - the spend, the data pass (:mod:`.data_pass`), the padding and the atomic write.

Names load lazily.
"""

from dpspark._lazy import lazy_exports

_NAMES = {
    "Backend": "backend",
    "FamilyStage": "stages",
    "Plan": "plan",
    "ReleaseSpec": "spec",
    "open_backend": "backend",
    "plan_release": "plan",
    "run_release": "runner",
    "supported_engines": "backend",
}
__getattr__ = lazy_exports(__name__, _NAMES)

__all__ = sorted(_NAMES)
