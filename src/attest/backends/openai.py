"""The `openai` backend: an OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama's /v1).

`POST /v1/chat/completions` with `response_format` json_schema. An API key, if any,
is sent as a bearer token, credentials in the base URL as Basic auth and the query
string; none is ever shown: a server that echoes one back, in an error or in an
answer, has it masked before the text leaves this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attest.backends.endpoint import Endpoint, check_api_key
from attest.backends.models import identify
from attest.backends.retry import RetryPolicy
from attest.backends.settings import DEFAULT_MAX_ANSWER_BYTES, DEFAULT_OPENAI_BASE_URL, Settings
from attest.backends.transport import Server, Wire, error_text, int_or_none, status_error
from attest.backends.types import DEFAULT_OPTIONS, BackendError, ChatResponse, Message

if TYPE_CHECKING:
    import httpx

__all__ = ["OPENAI_HINT", "OpenAIBackend", "make_openai"]

OPENAI_HINT = "check that the server is running and that ATTEST_OPENAI_BASE_URL points at the right server"


def _first_choice_text(data: Mapping[str, Any]) -> str | None:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        return None
    return str(message["content"])


_WIRE = Wire("the server", OPENAI_HINT, _first_choice_text, "choices[0].message.content")


class OpenAIBackend:
    """An OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama's /v1)."""

    kind = "openai"

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str | Endpoint = DEFAULT_OPENAI_BASE_URL,
        client: httpx.Client | None = None,
        options: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        api_key: str | None = None,
        digest: str | None = None,
        kind: str = "openai",
    ) -> None:
        endpoint = base_url if isinstance(base_url, Endpoint) else Endpoint.parse(base_url, "the server's base URL")
        key = check_api_key(api_key, "the API key")
        self.kind = kind
        self._model = model
        self.base_url = endpoint.url
        self.options = dict(options or DEFAULT_OPTIONS)
        self.retry = retry or RetryPolicy()
        headers = {"Authorization": f"Bearer {key}"} if key else None
        secrets = (key, f"Bearer {key}") if key else ()
        self._server = Server(
            endpoint,
            _WIRE,
            client=client,
            retry=self.retry,
            headers=headers,
            secrets=secrets,
            max_bytes=max_answer_bytes,
        )
        self._digest = digest

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        body = self._body(messages, schema, seed)
        data, text, latency = self._server.post("/v1/chat/completions", body, self._describe)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        if self._digest is None:
            self._digest = self._server.mask(str(data.get("system_fingerprint") or ""))
        return ChatResponse(
            text=text,
            latency_s=latency,
            prompt_tokens=int_or_none(usage.get("prompt_tokens")),
            completion_tokens=int_or_none(usage.get("completion_tokens")),
            model=self._model or self._server.mask(str(data.get("model", ""))),
            digest=self._digest,
        )

    def _body(self, messages: Sequence[Message], schema: Mapping[str, Any], seed: int | None) -> dict[str, Any]:
        name = str(schema.get("title", "answer"))
        body: dict[str, Any] = {
            "messages": list(messages),
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(schema), "strict": True},
            },
            **self.options,
        }
        if seed is not None:
            body["seed"] = seed
        if self._model:
            body["model"] = self._model
        return body

    @property
    def model(self) -> str:
        """The model's id. When none was given, the server is asked once (`GET /v1/models`).

        So the cache key (`Identity.of` reads this first) never holds an empty model:
        a server that cannot name exactly one model is a BackendError saying to pass
        --model. `chat_json` does not ask: without a cache, the server's default is fine.
        """
        if not self._model:
            self._model, digest = identify(self._server)
            if self._digest is None and digest:
                self._digest = digest
        return self._model

    def digest(self) -> str:
        """Whatever the server reports as its fingerprint (empty until the first answer, if none)."""
        return self._digest or ""

    def _describe(self, resp: httpx.Response, url: str) -> BackendError:
        """The error for a refused request (the server masks any secret it echoed)."""
        if resp.status_code == 404:
            return BackendError(
                f"the server at {url} has no such model or route (404: {error_text(resp)}): "
                "check --model and ATTEST_OPENAI_BASE_URL",
                url=url,
            )
        return status_error(resp, url, "the server", "set ATTEST_OPENAI_API_KEY to a key this server accepts")

    def close(self) -> None:
        self._server.close()


def make_openai(settings: Settings, client: httpx.Client | None = None) -> OpenAIBackend:
    """The openai backend `settings` describe (base URL and API key from the environment)."""
    return OpenAIBackend(
        settings.model,
        base_url=settings.openai,
        client=client,
        options=settings.options,
        retry=settings.retry,
        max_answer_bytes=settings.max_answer_bytes,
        api_key=settings.openai_api_key,
    )
