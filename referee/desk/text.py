"""Text made safe for a page: escaped for HTML and SVG, control characters made visible.

Player and game ids come from the tables' backends: whatever they hold (quotes, ``<script>``,
a control character, a right-to-left override) is shown as text, never read as markup.
"""

from __future__ import annotations

import html
import unicodedata


def visible(text: str) -> str:
    """Returns ``text`` with its control and format characters written as escapes
    (``\\x1b``, ``\\u202e``), so that none of them acts on the page."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if unicodedata.category(ch) in ("Zs",):
        return ch
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def esc(text: str) -> str:
    """Returns ``text`` escaped for an HTML or SVG text node."""
    return html.escape(visible(text), quote=False)


def attr(text: str) -> str:
    """Returns ``text`` escaped for an attribute value in double quotes."""
    return html.escape(visible(text), quote=True)
