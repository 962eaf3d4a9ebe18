"""Small pure helpers the three scorers share."""

from __future__ import annotations

import re

from pydantic import BaseModel

from attest.answers import ModelOutputError, parse_answer

__all__ = ["parse_or_error", "title_words"]

_WORD = re.compile(r"[a-z0-9][a-z0-9-]{3,}")
_COMMON = frozenset(
    [
        "with",
        "from",
        "into",
        "that",
        "this",
        "their",
        "using",
        "based",
        "toward",
        "towards",
        "over",
        "under",
        "between",
        "among",
    ]
)


def parse_or_error(text: str, model: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """The parsed answer, or None and the prose reason it is unusable."""
    try:
        return parse_answer(text, model), None
    except ModelOutputError as exc:
        return None, exc.reason


def title_words(title: str) -> set[str]:
    """The title's distinctive lower-case words (four letters or more, not filler)."""
    return {w.strip("-") for w in _WORD.findall(title.lower())} - _COMMON
