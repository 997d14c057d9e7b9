"""The ``[output]``, ``[spark]`` and ``[budget]`` sections: where the release goes, Spark settings, the ledger."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from dpspark.api.config.common import exact, fail
from dpspark.engine.spec import BudgetSpec


def parse_output(raw: Mapping[str, Any], source: Path, output: str | None) -> Path:
    """The release directory: ``[output] path`` relative to the config file, an ``output`` override to the cwd."""
    out = output if output is not None else (raw.get("output") or {}).get("path")
    if not isinstance(out, str) or not out:
        raise fail(source, "missing [output] path")
    out_path = Path(out) if (os.path.isabs(out) or output is not None) else (source.parent / out)
    return out_path.resolve()


def parse_spark(raw: Mapping[str, Any]) -> dict[str, str]:
    """The free-form ``[spark]`` settings of the embedded session, as strings."""
    return {str(k): str(v) for k, v in (raw.get("spark") or {}).items()}


def parse_budget(raw: Mapping[str, Any], source: Path) -> BudgetSpec | None:
    """The optional ``[budget]`` ledger: its path (relative to the config), the declared dataset id, totals."""
    if "budget" not in raw:
        return None
    b = raw["budget"]
    if not isinstance(b["ledger"], str) or not isinstance(b["dataset"], str) or not b["dataset"]:
        raise fail(source, "budget.ledger must be a path and budget.dataset a declared dataset id")
    ledger = Path(b["ledger"]) if os.path.isabs(b["ledger"]) else (source.parent / b["ledger"])
    total_eps = exact(b, "total_epsilon", source, "budget") if "total_epsilon" in b else None
    total_delta = exact(b, "total_delta", source, "budget") if "total_delta" in b else None
    return BudgetSpec(ledger.resolve(), b["dataset"], total_eps, total_delta)
