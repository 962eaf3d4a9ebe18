"""Pieces of prompt text shared by the three renderers.

The stub backend reads these labelled lines back, so their prefixes are part of
the contract between the renderers and the stub.
"""

from __future__ import annotations

__all__ = ["item_block", "one_line"]


def item_block(title: str, summary: str) -> str:
    """The item as the model sees it: a labelled title line and summary line."""
    return f"Title: {one_line(title)}\nSummary: {one_line(summary)}"


def one_line(text: str) -> str:
    """`text` with every run of whitespace, newlines included, made one space: one labelled line."""
    return " ".join(text.split())
