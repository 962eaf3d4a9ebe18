"""`ask`: send a task's rendered messages to a model and return the validated answer.

The task modules call it; without an explicit `chat_json` it uses the production
backend from the environment (`ATTEST_BACKEND`, `ATTEST_MODEL`, ...), built once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from attest.answers import parse_answer, schema_of
from attest.backends.types import ChatJSON, Message

__all__ = ["ask", "default_chat_json"]

T = TypeVar("T", bound=BaseModel)


@functools.cache
def default_chat_json() -> ChatJSON:
    """The production backend from the environment (ATTEST_BACKEND, ATTEST_MODEL, ...), built once.

    `default_chat_json.cache_clear()` forgets it, so the next call reads the environment again.
    """
    from attest.backends.registry import make_backend
    from attest.backends.settings import Settings

    return make_backend(Settings.resolve()).chat_json


def ask(messages: Sequence[Message], model: type[T], chat_json: ChatJSON | None = None) -> T:
    """Send rendered messages under `model`'s schema and return the validated answer."""
    chat = chat_json or default_chat_json()
    return parse_answer(chat(messages, schema_of(model)).text, model)
