"""`ask`: send a task's rendered messages to a model and return the validated answer.

The task modules call it; without an explicit `chat_json` it uses the production
backend from the environment (`ATTEST_BACKEND`, `ATTEST_MODEL`, ...), built once.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from attest.answers import parse_answer, schema_of
from attest.backends.types import ChatJSON, Message, StubAnswer

__all__ = ["ask", "default_chat_json"]

T = TypeVar("T", bound=BaseModel)


@functools.cache
def default_chat_json(stub_answer: StubAnswer | None = None) -> ChatJSON:
    """The production backend from the environment (ATTEST_BACKEND, ATTEST_MODEL, ...), built once per
    feature; `stub_answer` is what the `stub` backend answers that feature with.

    `default_chat_json.cache_clear()` forgets it, so the next call reads the environment again.
    """
    from attest.backends.registry import make_backend
    from attest.backends.settings import Settings

    return make_backend(dataclasses.replace(Settings.resolve(), stub_answer=stub_answer)).chat_json


def ask(
    messages: Sequence[Message],
    model: type[T],
    chat_json: ChatJSON | None = None,
    *,
    stub_answer: StubAnswer | None = None,
) -> T:
    """Send rendered messages under `model`'s schema and return the validated answer (`stub_answer`: what the
    stub backend answers when it is the environment's backend)."""
    chat = chat_json or default_chat_json(stub_answer)
    return parse_answer(chat(messages, schema_of(model)).text, model)
