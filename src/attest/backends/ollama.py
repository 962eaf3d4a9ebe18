"""The `ollama` backend: Ollama's native API, `POST /api/chat` with `format` set to the JSON schema."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attest.backends.endpoint import Endpoint
from attest.backends.retry import RetryPolicy
from attest.backends.settings import DEFAULT_MAX_ANSWER_BYTES, DEFAULT_OLLAMA_HOST, DEFAULT_OLLAMA_MODEL, Settings
from attest.backends.transport import Server, Wire, error_text, int_or_none, status_error
from attest.backends.types import DEFAULT_OPTIONS, BackendError, ChatResponse, Message

if TYPE_CHECKING:
    import httpx

__all__ = ["OLLAMA_HINT", "OllamaBackend", "make_ollama"]

OLLAMA_HINT = "start it with `ollama serve` (or set OLLAMA_HOST), or use `--backend local`"


def _ollama_text(data: Mapping[str, Any]) -> str | None:
    message = data.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        return None
    return str(message["content"])


_WIRE = Wire("Ollama", OLLAMA_HINT, _ollama_text, "message.content")


class OllamaBackend:
    """Ollama's native API: `POST /api/chat` with `format` set to the JSON schema.

    `host` is a URL or an `Endpoint`; credentials in it are sent as Basic auth and
    never shown.
    """

    kind = "ollama"

    def __init__(
        self,
        model: str = DEFAULT_OLLAMA_MODEL,
        *,
        host: str | Endpoint = DEFAULT_OLLAMA_HOST,
        client: httpx.Client | None = None,
        options: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        endpoint = host if isinstance(host, Endpoint) else Endpoint.parse(host, "the Ollama host")
        self.model = model
        self.host = endpoint.url
        self.options = dict(options or DEFAULT_OPTIONS)
        self.retry = retry or RetryPolicy()
        self._server = Server(endpoint, _WIRE, client=client, retry=self.retry, max_bytes=max_answer_bytes)
        self._digest: str | None = None

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        body = self._body(messages, schema, seed)
        data, text, latency = self._server.post("/api/chat", body, self._describe)
        return ChatResponse(
            text=text,
            latency_s=latency,
            prompt_tokens=int_or_none(data.get("prompt_eval_count")),
            completion_tokens=int_or_none(data.get("eval_count")),
            model=self._server.mask(str(data.get("model", self.model))),
            digest=self.digest(),
        )

    def _body(self, messages: Sequence[Message], schema: Mapping[str, Any], seed: int | None) -> dict[str, Any]:
        opts = {k: v for k, v in self.options.items() if k != "max_tokens"}
        if seed is not None:
            opts["seed"] = seed
        if "max_tokens" in self.options:
            opts["num_predict"] = self.options["max_tokens"]
        return {
            "model": self.model,
            "messages": list(messages),
            "stream": False,
            "format": dict(schema),
            "options": opts,
        }

    def digest(self) -> str:
        """The model's content digest from `/api/tags`, fetched once."""
        if self._digest is None:
            self._digest = self._fetch_digest()
        return self._digest

    def _fetch_digest(self) -> str:
        try:
            listed = self._server.get("/api/tags", self._describe).get("models")
        except BackendError as exc:
            raise self._unreachable(exc) if exc.retryable else exc from None
        models = listed if isinstance(listed, list) else []
        for entry in models:
            if isinstance(entry, dict) and self.model in (entry.get("name"), entry.get("model")):
                return self._server.mask(str(entry.get("digest", "")))
        for entry in models:
            if isinstance(entry, dict) and entry.get("name") == f"{self.model}:latest":
                return self._server.mask(str(entry.get("digest", "")))
        raise self._not_pulled(self._server.shown("/api/tags"))

    def _unreachable(self, err: BackendError) -> BackendError:
        return BackendError(f"{err}: {OLLAMA_HINT}", url=err.url, cause=err.cause)

    def _not_pulled(self, url: str) -> BackendError:
        return BackendError(
            f"Ollama at {self.host} has no model {self.model!r}: run `ollama pull {self.model}`",
            url=url,
            cause=f"model {self.model} is not pulled",
        )

    def _describe(self, resp: httpx.Response, url: str) -> BackendError:
        if resp.status_code == 404 and "not found" in error_text(resp).lower():
            return self._not_pulled(url)
        return status_error(resp, url, "Ollama", "check OLLAMA_HOST")

    def close(self) -> None:
        self._server.close()


def make_ollama(settings: Settings, client: httpx.Client | None = None) -> OllamaBackend:
    """The ollama backend `settings` describe (model default gemma4:e2b, host from OLLAMA_HOST)."""
    return OllamaBackend(
        settings.model or DEFAULT_OLLAMA_MODEL,
        host=settings.ollama,
        client=client,
        options=settings.options,
        retry=settings.retry,
        max_answer_bytes=settings.max_answer_bytes,
    )
