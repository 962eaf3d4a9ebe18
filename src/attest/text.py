"""`printable`: text from outside (servers, models, files, caches) made safe to show on a terminal.

A leaf module (standard library only). Control characters, terminal escapes and
invisible or reordering marks are shown as Python-style escapes (`\\x1b`, `\\r`,
`\\u202e`), so a hostile server or answer can neither move the cursor, recolour,
retitle or clear the terminal, nor make one line look like two.
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]

_NAMED = {"\t": "\\t", "\r": "\\r", "\n": "\\n"}


def printable(text: str, *, multiline: bool = False) -> str:
    """`text` with every control, format or line-separator character escaped.

    Newlines are kept only when `multiline` (output meant to span lines); in a
    one-line message they are escaped like the rest. Other space separators (a
    no-break space) become a plain space.
    """
    return "".join(_show(ch, multiline) for ch in text)


def _show(ch: str, multiline: bool) -> str:
    if ch.isprintable() or (ch == "\n" and multiline):
        return ch
    if ch in _NAMED:
        return _NAMED[ch]
    if unicodedata.category(ch) == "Zs":
        return " "
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
