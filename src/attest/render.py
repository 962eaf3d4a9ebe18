"""Pieces of prompt text shared by the three renderers.

The stub backend reads these labelled lines back, so their prefixes are part of
the contract between the renderers and the stub.
"""

from __future__ import annotations

__all__ = ["ITEM_LABELS", "item_block"]

ITEM_LABELS = ("Title:", "Summary:")


def item_block(title: str, summary: str) -> str:
    """The item as the model sees it: a labelled title line and summary line."""
    return f"Title: {_one_line(title)}\nSummary: {_one_line(summary)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())
