"""The `local` backend: SmolLM2-135M in a llama.cpp server the process starts (see `llamacpp`).

It speaks to the server through the `openai` backend, under its own kind, so its
cache keys are its own. Its `options` are the request's options plus the server's
`ServerSettings` under "server" (threads and slots change answers), so answers from
different settings never share a key; only the request's options are sent.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attest.backends.llamacpp import ServerSettings, file_digest, gguf_path, require_xllamacpp, shared_servers
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
        self._free: queue.Queue[OpenAIBackend] | None = None  # one backend per server, taken while it answers
        self._all: list[OpenAIBackend] = []
        self._start_lock = threading.Lock()

    def digest(self) -> str:
        return self._digest

    def chat_json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], *, seed: int | None = None
    ) -> ChatResponse:
        """One answer from whichever server is free (each answers one request at a time per slot)."""
        free = self._servers()
        inner = free.get()
        try:
            return inner.chat_json(messages, schema, seed=seed)
        finally:
            free.put(inner)

    @property
    def lanes(self) -> int:
        """How many requests it answers at once: one per slot of each server (the run's default concurrency)."""
        return self.server.servers * self.server.slots

    def _servers(self) -> queue.Queue[OpenAIBackend]:
        with self._start_lock:
            if self._free is None:
                free: queue.Queue[OpenAIBackend] = queue.Queue()
                for server in shared_servers(self.server):
                    for _ in range(self.server.slots):
                        inner = self._server_backend(server.base_url)
                        self._all.append(inner)
                        free.put(inner)
                self._free = free
            return self._free

    def _server_backend(self, base_url: str) -> OpenAIBackend:
        return OpenAIBackend(
            self.model,
            base_url=base_url,
            client=self._client,
            options=self._request_options,
            retry=self._retry,
            digest=self._digest,
            kind="local",
            max_answer_bytes=self._max_answer_bytes,
        )

    def close(self) -> None:
        for inner in self._all:
            inner.close()


def make_local(settings: Settings, client: httpx.Client | None = None) -> LocalBackend:
    """The local backend with `settings`' options and retries (the model is always SmolLM2-135M)."""
    return LocalBackend(
        client=client, options=settings.options, retry=settings.retry, max_answer_bytes=settings.max_answer_bytes
    )
