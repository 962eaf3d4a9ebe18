"""A recording fake for `attest.backends.types.ChatJSON`: it answers from a queue or a function, keeping what it got.

    chat = RecordingChat(['{"tags": ["catalysis"]}'])
    tag_item("title", "summary", chat_json=chat)
    messages, schema = chat.history[0]

An answer is the model's raw text (str), a mapping (sent as its JSON) or a whole
`ChatResponse`. A function answer is called with (messages, schema) for every request.
"""

from __future__ import annotations

import copy
import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from attest.backends.stub import StubBackend, explanation_answer, reaction_answer, tags_answer
from attest.backends.types import ChatResponse, Message

Answer = str | Mapping[str, Any] | ChatResponse
AnswerFn = Callable[[Sequence[Message], Mapping[str, Any]], Answer]

__all__ = ["Answer", "AnswerFn", "FakeBackend", "RecordingChat", "Sent"]


class Sent(NamedTuple):
    """One request as the fake received it (deep copies: later mutation by the caller does not show)."""

    messages: list[Message]
    schema: dict[str, Any]


class RecordingChat:
    """A `ChatJSON` that records every request in `.history` and answers from a queue or a function."""

    def __init__(
        self,
        answers: Iterable[Answer] | AnswerFn = (),
        *,
        model: str = "fake-model",
        digest: str = "sha256:fake",
    ) -> None:
        self._fn: AnswerFn | None = answers if callable(answers) else None
        self._queue: deque[Answer] = deque() if callable(answers) else deque(answers)
        self.model = model
        self.digest = digest
        self.history: list[Sent] = []

    def enqueue(self, *answers: Answer) -> None:
        """Add answers to the end of the queue."""
        self._queue.extend(answers)

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
        self.history.append(Sent(copy.deepcopy(list(messages)), copy.deepcopy(dict(schema))))
        return self._respond(self._next(messages, schema))

    def _next(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> Answer:
        if self._fn is not None:
            return self._fn(messages, schema)
        if not self._queue:
            raise AssertionError(f"RecordingChat: request {len(self.history)} arrived with no answer queued")
        return self._queue.popleft()

    def _respond(self, answer: Answer) -> ChatResponse:
        if isinstance(answer, ChatResponse):
            return answer
        text = answer if isinstance(answer, str) else json.dumps(dict(answer))
        return ChatResponse(text, 0.0, None, None, self.model, self.digest)


class FakeBackend:
    """A `Backend` around a `RecordingChat`, for code that takes a backend (or a backend factory)."""

    kind = "fake"

    def __init__(self, chat: RecordingChat, *, options: Mapping[str, Any] | None = None) -> None:
        self.chat = chat
        self.model = chat.model
        self.options = dict(options or {"temperature": 0.0})
        self.closed = False
        self.seeds: list[int | None] = []  # the seed each request was sent with (None: the options' own)

    def digest(self) -> str:
        return self.chat.digest

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        self.seeds.append(seed)
        return self.chat(messages, schema)

    def close(self) -> None:
        self.closed = True


_SEED_ANSWERS = {"ItemTags": tags_answer, "Reaction": reaction_answer, "Explanation": explanation_answer}


def _seed_answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> dict[str, Any]:
    return _SEED_ANSWERS[str(schema.get("title"))](messages, schema)


def seed_stub() -> StubBackend:
    """The stub backend answering any of the app's three features (a test's convenience: the backend itself
    takes one answerer, which the task or the feature supplies)."""
    return StubBackend(answer=_seed_answer)
