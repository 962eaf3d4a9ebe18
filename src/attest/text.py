"""`printable`: text from outside (servers, models, files, caches) made safe to show on a terminal.

A leaf module (standard library only). Control characters, terminal escapes and
invisible or reordering marks are shown as Python-style escapes (`\\x1b`, `\\r`,
`\\u202e`), so a hostile server or answer can neither move the cursor, recolour,
retitle or clear the terminal, nor make one line look like two.
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable", "printable_json"]

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


def printable_json(text: str) -> str:
    """JSON text (from json.dumps with ensure_ascii=False) with every character `printable` would escape
    written as a JSON escape: the same value when parsed, and nothing in it can drive a terminal.

    Outside strings JSON holds only printable characters and the indent's newlines, so every other
    character met is inside a string, where `\\uXXXX` means the same character."""
    return "".join(ch if ch.isprintable() or ch == "\n" else _json_escape(ch) for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
