"""Releases in a notebook: labelled pandas frames (floats to read, exact strings beside them) and HTML views.

Display only. Every float here is a report of an exact value the release holds (``# report``); the exact
rationals stay in the release and in the ``*_exact`` string columns.
"""

from __future__ import annotations

import html
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["exact_columns", "label_frame", "release_html", "release_text"]

#: rows of values a release's HTML view shows (the rest: ``to_pandas()``)
HTML_ROWS = 20
#: rows of values a release's ``repr()`` shows
TEXT_ROWS = 5


def label_frame(frame: Any, config: Mapping[str, Any]) -> Any:
    """``frame`` labelled with what its counts count (after contribution bounding): ``attrs["counted"]`` in full
    (e.g. "distinct units (user) per key, at most 2 keys per unit") and, shown when the frame is printed, the
    name of its column index in short ("distinct units per key")."""
    from dpspark.text.counted import counted_short, counted_words

    frame.attrs["counted"] = counted_words(config)
    frame.columns.name = counted_short(config)
    return frame


def _float(v: Fraction | None) -> float | None:
    return None if v is None else float(v)  # report


def _exact(v: Fraction | None) -> str | None:
    if v is None:
        return None
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def exact_columns(name: str, values: Iterable[Fraction | None]) -> dict[str, list[Any]]:
    """``{name: floats for reading, name + "_exact": the exact rationals as "p/q" strings}`` (None stays None)."""
    vals = list(values)
    return {name: [_float(v) for v in vals], f"{name}_exact": [_exact(v) for v in vals]}


def _lines_html(text: str) -> str:
    return "<br>".join(html.escape(line) for line in text.splitlines())


def release_html(title: str, facts: Sequence[tuple[str, str]], privacy: str, accuracy: str, frame: Any = None,
                 note: str = "") -> str:
    """A release as HTML: a title, (label, text) facts, the values (first :data:`HTML_ROWS` rows of ``frame``),
    the guarantee and the error bars in words."""
    parts = [f"<div><b>{html.escape(title)}</b>", "<table>"]
    parts += [f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>{html.escape(v)}"
              "</td></tr>" for k, v in facts]
    parts.append("</table>")
    if frame is not None:
        shown = frame.head(HTML_ROWS).copy()
        shown.columns.name = None  # what was counted is among the facts above
        for c in shown.columns:
            if shown[c].dtype == object:
                shown[c] = shown[c].where(shown[c].notna(), "")
        parts.append(shown.to_html(index=False, na_rep="", float_format=lambda x: f"{x:.6g}"))  # report
        if len(frame) > HTML_ROWS:
            parts.append(f"<p>{len(frame) - HTML_ROWS} more rows: <code>to_pandas()</code></p>")
    if note:
        parts.append(f"<p>{html.escape(note)}</p>")
    parts.append(f"<p><b>Privacy</b><br>{_lines_html(privacy)}</p>")
    parts.append(f"<p><b>Accuracy</b><br>{_lines_html(accuracy)}</p></div>")
    return "\n".join(parts)


def release_text(title: str, facts: Sequence[tuple[str, str]], privacy: str, accuracy: str, frame: Any = None,
                 note: str = "") -> str:
    """A release as plain text (its ``repr()``): the same parts as :func:`release_html`, the values cut to the
    first :data:`TEXT_ROWS` rows and to the columns for reading (the exact strings stay in ``to_pandas()``)."""
    lines = [title]
    width = max((len(k) for k, _ in facts), default=0)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in facts]
    if frame is not None:
        readable = [c for c in frame.columns if not str(c).endswith("_exact") and c != "condition"]  # to read
        shown = frame.head(TEXT_ROWS)[readable].rename_axis(None, axis=1)  # what was counted is among the facts
        lines.append("values (to_pandas()):" if len(frame) else "values: none released")
        if len(frame):
            lines += ["  " + ln for ln in shown.to_string(index=False, float_format=lambda x: f"{x:.6g}").splitlines()]  # report
        if len(frame) > TEXT_ROWS:
            lines.append(f"  ... {len(frame) - TEXT_ROWS} more rows")
    if note:
        lines.append(note)
    lines.append("privacy:")
    lines += ["  " + ln for ln in privacy.splitlines()]
    lines.append("accuracy:")
    lines += ["  " + ln for ln in accuracy.splitlines()]
    return "\n".join(lines)
