"""Small pure helpers the three scorers share; word matching lives in evals/corpus/words.py."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from attest.answers import ModelOutputError, parse_answer
from evals.corpus.words import content_words

__all__ = ["names_item", "parse_or_error"]

T = TypeVar("T", bound=BaseModel)


def parse_or_error(text: str, model: type[T]) -> tuple[T | None, str]:
    """The parsed answer and "", or None and the prose reason it is unusable."""
    try:
        return parse_answer(text, model), ""
    except ModelOutputError as exc:
        return None, exc.reason


def names_item(title: str, text: str) -> bool:
    """Whether `text` names a content word of `title` (compounds split, stop words and filler ignored)."""
    return bool(content_words(title) & content_words(text))
