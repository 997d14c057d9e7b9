"""Fonts for ``dpspark plot``: find installed fonts that draw the keys (CJK included), else escape the key.

matplotlib draws a glyph missing from its font as an empty box, so a CJK key
would become a row of boxes. :func:`font_chain` lists installed fonts from
:data:`CJK_FONTS` (Debian's ``fonts-noto-cjk``, which ``scripts/lib.sh``
installs when run as root, and common alternatives); matplotlib >= 3.6 falls
back glyph by glyph along that list. :func:`drawable_label` keeps a label
whose every character one of those fonts covers, and otherwise returns its
escaped form (``\\u6771``), which every font draws.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

#: Fonts tried after matplotlib's default, in order (first installed ones win).
CJK_FONTS = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Noto Serif CJK JP",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "IPAGothic",
    "IPAexGothic",
    "TakaoGothic",
    "Unifont",
)


@lru_cache(maxsize=1)
def _installed() -> dict[str, str]:
    from matplotlib import font_manager

    return {f.name: f.fname for f in font_manager.fontManager.ttflist}


def font_chain(default: str = "DejaVu Sans") -> list[str]:
    """matplotlib's default family followed by the installed fonts of :data:`CJK_FONTS`."""
    installed = _installed()
    return [default, *(name for name in CJK_FONTS if name in installed)]


@lru_cache(maxsize=16)
def _charmap(path: str) -> frozenset[int]:
    from matplotlib.ft2font import FT2Font

    try:
        return frozenset(FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):
        return frozenset()


def covered(chain: list[str]) -> frozenset[int]:
    """Code points that some font of ``chain`` draws."""
    installed = _installed()
    out: set[int] = set()
    for name in chain:
        if name in installed:
            out |= _charmap(installed[name])
    return frozenset(out)


def drawable_label(label: str, codepoints: Any) -> str:
    """``label`` when every character is drawable (spaces always are), else its escaped form."""
    if all(ch.isspace() or ord(ch) in codepoints for ch in label):
        return label
    return ascii(label)[1:-1]
