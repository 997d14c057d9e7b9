"""dpspark: exact differentially private releases from warehouse-scale data.

The curated public API::

    import dpspark
    with dpspark.Session(data, max_units=..., budget={"epsilon": "2"}) as s:
        rel = s.histogram(keys=["city"], universe={...}, mechanism="stability", epsilon="1", delta="1e-9")
    dpspark.open_release("releases/city").count("Paris")
    spec = dpspark.ReleaseSpec.from_toml("conf/queries-stability.toml")

Names are imported lazily, so ``import dpspark`` stays cheap (the lookup library never loads Spark).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Session": "dpspark.api.session",
    "ReleaseSpec": "dpspark.api.config",
    "open_release": "dpspark.lookup",
    "DPSparkError": "dpspark.errors",
    "register_mechanism": "dpspark.mechanisms.registry",
    "mechanisms": "dpspark.mechanisms.registry",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dpspark' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(module)
    if name == "register_mechanism":
        return mod.register
    if name == "mechanisms":
        return mod.names
    return getattr(mod, name)
