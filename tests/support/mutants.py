"""One-line source mutants: a function recompiled with one fragment of its source replaced (mutation tests)."""

from __future__ import annotations

import inspect
import textwrap
from types import ModuleType
from typing import Any


def mutated(module: ModuleType, qualname: str, old: str, new: str) -> dict[str, Any]:
    """The namespace of ``module`` with ``qualname`` (a function, or ``Class.method``) recompiled from its
    source with ``old`` replaced by ``new`` (which must occur); the mutant is at ``qualname``'s last part."""
    target: Any = module
    for part in qualname.split("."):
        target = getattr(target, part)
    src = textwrap.dedent(inspect.getsource(target))
    assert old in src, f"{old!r} is not in {qualname}"
    namespace = dict(vars(module))
    exec(compile(src.replace(old, new), f"<mutant of {qualname}>", "exec"), namespace)
    return namespace
