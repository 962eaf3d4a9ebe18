"""The `local` backend: SmolLM2-135M in a llama.cpp server the process starts (see `llamacpp`).

It speaks to the server through the `openai` backend, under its own kind, so its
cache keys are its own. Its `options` are the request's options plus the server's
`ServerSettings` under "server" (threads and slots change answers), so answers from
different settings never share a key; only the request's options are sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attest.backends.llamacpp import ServerSettings, file_digest, gguf_path, require_xllamacpp, shared_server
from attest.backends.openai import OpenAIBackend
from attest.backends.retry import RetryPolicy
from attest.backends.settings import DEFAULT_MAX_ANSWER_BYTES, Settings
from attest.backends.types import DEFAULT_OPTIONS, ChatResponse, Message

if TYPE_CHECKING:
    import httpx

__all__ = ["LocalBackend", "make_local"]


class LocalBackend:
    """SmolLM2-135M in a llama.cpp server of its own process, started on the first request.

    The model name and digest come from the GGUF file, so a fully cached run never
    starts the server. A missing `xllamacpp` or model file is reported here, before
    any work starts.
    """

    kind = "local"

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        options: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        server: ServerSettings | None = None,
    ) -> None:
        require_xllamacpp()
        path = gguf_path()
        self.model = path.stem
        self.server = server or ServerSettings.resolve()
        self._request_options = dict(options or DEFAULT_OPTIONS)
        self.options: dict[str, Any] = {**self._request_options, "server": self.server.key()}
        self._digest = file_digest(path)
        self._client = client
        self._retry = retry
        self._max_answer_bytes = max_answer_bytes
        self._inner: OpenAIBackend | None = None

    def digest(self) -> str:
        return self._digest

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        return self._server_backend().chat_json(messages, schema, seed=seed)

    def _server_backend(self) -> OpenAIBackend:
        if self._inner is None:
            self._inner = OpenAIBackend(
                self.model,
                base_url=shared_server(self.server).base_url,
                client=self._client,
                options=self._request_options,
                retry=self._retry,
                digest=self._digest,
                kind="local",
                max_answer_bytes=self._max_answer_bytes,
            )
        return self._inner

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


def make_local(settings: Settings, client: httpx.Client | None = None) -> LocalBackend:
    """The local backend with `settings`' options and retries (the model is always SmolLM2-135M)."""
    return LocalBackend(
        client=client, options=settings.options, retry=settings.retry, max_answer_bytes=settings.max_answer_bytes
    )
