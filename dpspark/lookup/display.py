"""Terminal text helpers for the lookup tables: display width (CJK), padding, safe echo of key text."""

from __future__ import annotations

import unicodedata


def char_width(ch: str) -> int:
    """Terminal columns of one character: 2 for East Asian wide/fullwidth, 0 for combining marks, else 1."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns of ``text`` (``len`` counts a CJK character as 1; a terminal draws it in 2)."""
    return sum(char_width(ch) for ch in text)


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal columns."""
    return text + " " * max(0, width - display_width(text))


def safe_text(text: str) -> str:
    """``text`` as typed when printable, else its escaped form (no control characters reach the terminal)."""
    return text if text.isprintable() else ascii(text)[1:-1]


def format_table(rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns by display width, two spaces apart (first row is the header)."""
    ncol = len(rows[0])
    widths = [max(display_width(r[i]) for r in rows) for i in range(ncol)]
    return ["  ".join(ljust(cell, w) for cell, w in zip(r, widths)).rstrip() for r in rows]
