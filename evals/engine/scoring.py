"""Small pure helpers the three scorers share; word matching lives in evals/corpus/words.py."""

from __future__ import annotations

import re
from typing import TypeVar

from pydantic import BaseModel

from attest.answers import ModelOutputError, parse_answer
from evals.corpus.words import STOPWORDS, content_words, words

__all__ = ["names_item", "not_a_sentence", "parse_or_error"]

T = TypeVar("T", bound=BaseModel)
_LABEL = re.compile(r"^\s*(?:\S+\s+)?\S+\s*:")  # "You:", "Topics:", "Your interests:" before the rest


def parse_or_error(text: str, model: type[T]) -> tuple[T | None, str]:
    """The parsed answer and "", or None and the prose reason it is unusable."""
    try:
        return parse_answer(text, model), ""
    except ModelOutputError as exc:
        return None, exc.reason


def names_item(title: str, text: str) -> bool:
    """Whether `text` names a content word of `title` (compounds split, stop words and filler ignored)."""
    return bool(content_words(title) & content_words(text))


def not_a_sentence(text: str) -> str:
    """Why `text` has no sentence shape (the prompt asks for one sentence), or ""."""
    if _LABEL.match(text):
        return (
            f"a label and a colon before a list of words ({' '.join(text.split()[:3])} ...) is not a sentence: "
            "write one sentence that says why the item matches"
        )
    if not set(words(text)) & STOPWORDS:
        return (
            "a bare list of words, with no word (you, and, this, ...) that makes them a sentence: say in one "
            "sentence why the item matches"
        )
    return ""
