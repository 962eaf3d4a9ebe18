"""The backend protocol and its value types: what goes to a model and what comes back.

A leaf module: it imports no transport and nothing from attest but `errors`, so the
scorers and the cache may import it without importing any backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from attest.errors import AttestError

__all__ = ["DEFAULT_OPTIONS", "Backend", "BackendError", "ChatJSON", "ChatResponse", "Message", "StubAnswer"]

Message = dict[str, str]
# The stub backend's answer for one request: (the rendered messages, the JSON schema) -> the JSON object.
# Each task brings its own (the app's three features: attest.backends.stub; an eval task: `Task.stub_answer`).
StubAnswer = Callable[[Sequence[Message], Mapping[str, Any]], dict[str, Any]]

# Sampling options every backend starts from: deterministic, and short enough for a small model.
DEFAULT_OPTIONS: Mapping[str, Any] = {"temperature": 0.0, "seed": 42, "max_tokens": 400}


class BackendError(AttestError):
    """The model server could not give an answer: unreachable, refusing, or failing.

    `retryable` says whether another try may help; `retry_after` is the server's
    Retry-After header, if it sent one; `cause` is the short reason (for notices).
    """

    def __init__(
        self,
        message: str,
        *,
        url: str = "",
        retryable: bool = False,
        cause: str = "",
        retry_after: str | None = None,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.retryable = retryable
        self.cause = cause or message
        self.retry_after = retry_after


@dataclass(frozen=True)
class ChatResponse:
    """What a backend returns: the raw text and where it came from."""

    text: str
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str
    digest: str


class ChatJSON(Protocol):
    """Anything that answers rendered messages under a JSON schema: a backend or a cache."""

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse: ...


class Backend(Protocol):
    """One model behind one server. `chat_json` is the only call the rest of attest makes.

    `model` and `digest()` are the model's identity for a cache key; reading them may
    ask the server once (Ollama's `/api/tags`, an OpenAI server's `/v1/models`).
    """

    kind: str

    @property
    def model(self) -> str: ...

    @property
    def options(self) -> Mapping[str, Any]: ...

    def digest(self) -> str: ...

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        """One answer; `seed`, when given, replaces the options' seed for this request (see request_seed)."""
        ...

    def close(self) -> None: ...
