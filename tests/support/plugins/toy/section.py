"""The ``toy_statement`` kind's section codec: exactly one integer answer."""

from __future__ import annotations

from typing import Any

from dpspark.release.errors import ReleaseFormatError


def check_toy_section(section: dict[str, Any], manifest: Any, name: str) -> None:
    """The section holds ``answer``, an integer (the noisy clipped sum)."""
    if not isinstance(section, dict) or set(section) != {"answer"}:
        raise ReleaseFormatError(f"{name}: a toy_statement section holds exactly ['answer']")
    answer = section["answer"]
    if isinstance(answer, bool) or not isinstance(answer, (int, str)):
        raise ReleaseFormatError(f"{name}: toy_statement.answer must be an integer")
