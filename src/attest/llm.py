"""Model backends: a rendered request goes in, the raw answer and its provenance come out.

Parsing and validating the answer is the caller's job (`parse_answer`), so a
malformed answer is data to score, never a crash. Transport faults are retried with
bounded backoff and then raised as one `BackendError` that names the URL and says
what to do. Every backend takes an injectable `httpx.Client`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from attest.errors import AttestError

if TYPE_CHECKING:
    import httpx  # imported where used: `import attest.llm` stays cheap for offline runs and rescore

    from attest.local import LocalServer

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "ChatJSON",
    "ChatResponse",
    "LocalBackend",
    "Message",
    "ModelOutputError",
    "OllamaBackend",
    "OpenAIBackend",
    "RetryPolicy",
    "Settings",
    "StubBackend",
    "ask",
    "default_chat_json",
    "make_backend",
    "parse_answer",
    "schema_of",
]

Message = dict[str, str]
T = TypeVar("T", bound=BaseModel)

BACKENDS = ("auto", "ollama", "openai", "local", "stub")
DEFAULT_OLLAMA_MODEL = "gemma4:e2b"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080"


class BackendError(AttestError):
    """The model server could not give an answer: unreachable, refusing, or failing."""

    def __init__(self, message: str, *, url: str = "", retryable: bool = False, cause: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.retryable = retryable
        self.cause = cause or message


class ModelOutputError(AttestError):
    """The model answered, but not with valid JSON for the task's schema."""

    def __init__(self, text: str, reason: str) -> None:
        shown = text if len(text) <= 200 else text[:200] + f"... ({len(text)} chars)"
        super().__init__(f"the model's answer is unusable: {reason}; it answered {shown!r}")
        self.text = text
        self.reason = reason


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


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries for transport faults: `attempts` tries, backoff doubling from `backoff_s`."""

    attempts: int = 3
    backoff_s: float = 0.5
    timeout_s: float = 120.0
    max_wait_s: float = 10.0

    def wait_before(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to sleep before retry number `attempt` (1-based), honouring Retry-After."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_wait_s)
            except ValueError:
                pass
        return float(min(self.backoff_s * 2 ** (attempt - 1), self.max_wait_s))


@dataclass(frozen=True)
class Settings:
    """Configuration resolved once at an entry point: argument, then environment, then default."""

    backend: str = "ollama"
    model: str = ""
    ollama_host: str = DEFAULT_OLLAMA_HOST
    openai_base_url: str = DEFAULT_OPENAI_BASE_URL
    options: Mapping[str, Any] = field(default_factory=lambda: {"temperature": 0.0, "seed": 42, "max_tokens": 400})
    retry: RetryPolicy = RetryPolicy()
    openai_api_key: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(
        cls,
        *,
        backend: str | None = None,
        model: str | None = None,
        default_backend: str = "ollama",
        env: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
    ) -> Settings:
        environ = os.environ if env is None else env
        kind = backend or environ.get("ATTEST_BACKEND") or default_backend
        if kind not in BACKENDS:
            raise AttestError(f"unknown backend {kind!r}: choose one of {', '.join(BACKENDS)}")
        return cls(
            backend=kind,
            model=model or environ.get("ATTEST_MODEL", ""),
            ollama_host=_normalise_host(environ.get("OLLAMA_HOST", DEFAULT_OLLAMA_HOST)),
            openai_base_url=environ.get("ATTEST_OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL).rstrip("/"),
            retry=retry or RetryPolicy(),
            openai_api_key=environ.get("ATTEST_OPENAI_API_KEY") or None,
        )


def _normalise_host(host: str) -> str:
    """Read OLLAMA_HOST as Ollama does: `host`, `host:port`, `scheme://host[:port][/path]`, `[::1]:port`.

    Without a scheme the port defaults to 11434; with one, to the scheme's own port.
    0.0.0.0 (and ::), which Ollama binds to, mean this machine.
    """
    text = host.strip() or DEFAULT_OLLAMA_HOST
    explicit = "://" in text
    parts = urlsplit(text if explicit else "http://" + text)
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::"):
        hostname = "127.0.0.1"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80 if explicit else 11434)
    except ValueError:
        raise AttestError(f"OLLAMA_HOST={host!r} has an invalid port: use host:port, e.g. 127.0.0.1:11434") from None
    shown = f"[{hostname}]" if ":" in hostname else hostname
    return f"{parts.scheme}://{shown}:{port}{parts.path.rstrip('/')}"


def _is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


class Backend(Protocol):
    """One model behind one server. `chat_json` is the only call the rest of attest makes."""

    kind: str
    model: str

    @property
    def options(self) -> Mapping[str, Any]: ...

    def digest(self) -> str: ...

    def chat_json(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse: ...

    def close(self) -> None: ...


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent as the structured-output format for `model`."""
    return model.model_json_schema()


def parse_answer(text: str, model: type[T]) -> T:
    """Parse a model's raw text into `model`, or raise ModelOutputError with a prose reason."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise ModelOutputError(text, f"output is not valid JSON: {_json_reason(exc)}") from None
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise ModelOutputError(text, f"output fails the {model.__name__} schema: {_validation_reason(exc)}") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _json_reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at char {exc.pos}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def _validation_reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"field '{where}': {err['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


# --- HTTP backends --------------------------------------------------------------------


def _post(
    client: httpx.Client,
    url: str,
    body: Mapping[str, Any],
    retry: RetryPolicy,
    describe: Callable[[httpx.Response], BackendError],
    wire: _Wire,
    headers: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], str, float]:
    """POST with bounded retries; return the decoded body, the answer text in it, and the good try's latency.

    `wire` says how the server's API names itself, where the answer sits and what
    to do when it fails. Only transport
    faults, 5xx, 429 and garbled or answerless bodies are retried; the final error
    names the URL, the cause, the number of attempts and what to do (`hint`).
    """
    import httpx

    server = wire.server
    last: BackendError | None = None
    attempt = 0
    for attempt in range(1, retry.attempts + 1):
        retry_after: str | None = None
        start = time.perf_counter()
        try:
            resp = client.post(url, json=body, headers=headers, timeout=retry.timeout_s)
            if resp.status_code < 400:
                data = _decode(resp, url, server)
                text = wire.answer(data)
                if text is None:
                    raise BackendError(
                        f"{server} at {url} answered without {wire.answer_field}", url=url, retryable=True
                    )
                return data, text, time.perf_counter() - start
            last = describe(resp)
            retry_after = resp.headers.get("retry-after")
        except httpx.TransportError as exc:
            last = _transport_error(exc, url, server, retry)
        except BackendError as exc:
            last = exc
        if not last.retryable or attempt == retry.attempts:
            break
        time.sleep(retry.wait_before(attempt, retry_after))
    assert last is not None
    if not last.retryable:
        raise last
    tries = f" after {attempt} attempts" if attempt > 1 else ""
    raise BackendError(f"{last}{tries}: {wire.hint}", url=url, retryable=True)


def _new_client(url: str) -> httpx.Client:
    """A client for `url`; proxy settings from the environment never reroute loopback traffic."""
    import httpx

    return httpx.Client(trust_env=not _is_loopback(url))


def _decode(resp: httpx.Response, url: str, server: str) -> dict[str, Any]:
    try:
        data = resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BackendError(
            f"{server} at {url} sent a body that is not JSON ({len(resp.content)} bytes)",
            url=url,
            retryable=True,
        ) from None
    if not isinstance(data, dict):
        raise BackendError(f"{server} at {url} sent JSON that is not an object", url=url, retryable=True)
    return data


def _transport_error(exc: httpx.TransportError, url: str, server: str, retry: RetryPolicy) -> BackendError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        cause = f"no answer within {retry.timeout_s:g} s"
    elif isinstance(exc, httpx.ConnectError):
        cause = "connection refused"
    else:
        cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return BackendError(f"cannot get an answer from {server} at {url} ({cause})", url=url, retryable=True, cause=cause)


def _error_text(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return resp.text[:200]
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            return str(err.get("message", err))[:200]
        if err is not None:
            return str(err)[:200]
    return resp.text[:200]


def _status_error(resp: httpx.Response, url: str, server: str, hint: str) -> BackendError:
    code = resp.status_code
    detail = _error_text(resp)
    if code in (401, 403):
        return BackendError(f"{server} at {url} refused the request ({code}: {detail}): {hint}", url=url)
    if code >= 500 or code == 429:
        return BackendError(f"{server} at {url} failed ({code}: {detail})", url=url, retryable=True)
    return BackendError(f"{server} at {url} rejected the request ({code}: {detail})", url=url)


_OLLAMA_HINT = "start it with `ollama serve` (or set OLLAMA_HOST), or use `--backend local`"
_OPENAI_HINT = "check that the server is running and that ATTEST_OPENAI_BASE_URL points at the right server"


class OllamaBackend:
    """Ollama's native API: `POST /api/chat` with `format` set to the JSON schema."""

    kind = "ollama"

    def __init__(
        self,
        model: str = DEFAULT_OLLAMA_MODEL,
        *,
        host: str = DEFAULT_OLLAMA_HOST,
        client: httpx.Client | None = None,
        options: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.host = host.rstrip("/")
        self.options = dict(options or Settings().options)
        self.retry = retry or RetryPolicy()
        self._client = client or _new_client(self.host)
        self._digest: str | None = None

    def chat_json(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
        url = f"{self.host}/api/chat"
        opts = {k: v for k, v in self.options.items() if k != "max_tokens"}
        if "max_tokens" in self.options:
            opts["num_predict"] = self.options["max_tokens"]
        body = {
            "model": self.model,
            "messages": list(messages),
            "stream": False,
            "format": dict(schema),
            "options": opts,
        }
        data, text, latency = _post(self._client, url, body, self.retry, self._describe, _OLLAMA_WIRE)
        return ChatResponse(
            text=text,
            latency_s=latency,
            prompt_tokens=_int_or_none(data.get("prompt_eval_count")),
            completion_tokens=_int_or_none(data.get("eval_count")),
            model=str(data.get("model", self.model)),
            digest=self.digest(),
        )

    def digest(self) -> str:
        """The model's content digest from `/api/tags`, fetched once."""
        if self._digest is None:
            self._digest = self._fetch_digest()
        return self._digest

    def _fetch_digest(self) -> str:
        import httpx

        url = f"{self.host}/api/tags"
        try:
            resp = self._client.get(url, timeout=self.retry.timeout_s)
        except httpx.TransportError as exc:
            raise self._unreachable(_transport_error(exc, url, "Ollama", self.retry)) from None
        if resp.status_code >= 400:
            raise self._describe(resp)
        models = _decode(resp, url, "Ollama").get("models") or []
        for entry in models:
            if isinstance(entry, dict) and self.model in (entry.get("name"), entry.get("model")):
                return str(entry.get("digest", ""))
        for entry in models:
            if isinstance(entry, dict) and entry.get("name") == f"{self.model}:latest":
                return str(entry.get("digest", ""))
        raise self._not_pulled(url)

    def _unreachable(self, err: BackendError) -> BackendError:
        return BackendError(f"{err}: {_OLLAMA_HINT}", url=err.url, cause=err.cause)

    def _not_pulled(self, url: str) -> BackendError:
        return BackendError(
            f"Ollama at {self.host} has no model {self.model!r}: run `ollama pull {self.model}`",
            url=url,
            cause=f"model {self.model} is not pulled",
        )

    def _describe(self, resp: httpx.Response) -> BackendError:
        url = str(resp.request.url)
        if resp.status_code == 404 and "not found" in _error_text(resp).lower():
            return self._not_pulled(url)
        return _status_error(resp, url, "Ollama", "check OLLAMA_HOST")

    def close(self) -> None:
        self._client.close()


class OpenAIBackend:
    """An OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama's /v1)."""

    kind = "openai"

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        client: httpx.Client | None = None,
        options: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        api_key: str | None = None,
        digest: str | None = None,
        kind: str = "openai",
    ) -> None:
        self.kind = kind
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.options = dict(options or Settings().options)
        self.retry = retry or RetryPolicy()
        self._client = client or _new_client(self.base_url)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self._digest = digest

    def chat_json(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
        url = f"{self.base_url}/v1/chat/completions"
        name = str(schema.get("title", "answer"))
        body: dict[str, Any] = {
            "messages": list(messages),
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(schema), "strict": True},
            },
            **self.options,
        }
        if self.model:
            body["model"] = self.model
        data, text, latency = _post(self._client, url, body, self.retry, self._describe, _OPENAI_WIRE, self._headers)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        if self._digest is None:
            self._digest = str(data.get("system_fingerprint") or "")
        return ChatResponse(
            text=text,
            latency_s=latency,
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            model=self.model or str(data.get("model", "")),
            digest=self._digest,
        )

    def digest(self) -> str:
        """Whatever the server reports as its fingerprint (empty until the first answer, if none)."""
        return self._digest or ""

    def _describe(self, resp: httpx.Response) -> BackendError:
        """The error for a refused request; an API key the server echoed back is masked."""
        err = self._status_error(resp)
        key = (self._headers or {}).get("Authorization", "").removeprefix("Bearer ")
        if key and key in str(err):
            return BackendError(str(err).replace(key, "[API key redacted]"), url=err.url, retryable=err.retryable)
        return err

    def _status_error(self, resp: httpx.Response) -> BackendError:
        hint = "set ATTEST_OPENAI_API_KEY to a key this server accepts"
        if resp.status_code == 404:
            url = str(resp.request.url)
            return BackendError(
                f"the server at {url} has no such model or route (404: {_error_text(resp)}): "
                "check --model and ATTEST_OPENAI_BASE_URL",
                url=url,
            )
        return _status_error(resp, str(resp.request.url), "the server", hint)

    def close(self) -> None:
        self._client.close()


def _ollama_text(data: Mapping[str, Any]) -> str | None:
    message = data.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        return None
    return str(message["content"])


def _first_choice_text(data: Mapping[str, Any]) -> str | None:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        return None
    return str(message["content"])


@dataclass(frozen=True)
class _Wire:
    """How one server API is spoken: its name in messages, the remedy when it fails, where its answer sits."""

    server: str
    hint: str
    answer: Callable[[Mapping[str, Any]], str | None]
    answer_field: str


_OLLAMA_WIRE = _Wire("Ollama", _OLLAMA_HINT, _ollama_text, "message.content")
_OPENAI_WIRE = _Wire("the server", _OPENAI_HINT, _first_choice_text, "choices[0].message.content")


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- stub ------------------------------------------------------------------------------


class StubBackend:
    """A deterministic offline model: keyword overlap between the reader and the item.

    It answers all three task schemas by reading the labelled lines the renderers
    write (`Title:`, `Summary:`, `Interests:`). It is the offline mode, the test
    double for whole-pipeline tests, and the baseline a real model must beat.
    """

    kind = "stub"
    model = "stub-keyword-overlap-v1"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = dict(options or Settings().options)

    def digest(self) -> str:
        return "stub-v1"

    def chat_json(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
        from attest import stub

        start = time.perf_counter()
        answer = stub.answer(str(schema.get("title", "")), messages[-1]["content"] if messages else "", schema)
        text = json.dumps(answer)
        return ChatResponse(text, time.perf_counter() - start, None, None, self.model, self.digest())

    def close(self) -> None:
        pass


# --- construction ---------------------------------------------------------------------


def make_backend(
    settings: Settings, client: httpx.Client | None = None, *, notice: Callable[[str], None] | None = None
) -> Backend:
    """Build the backend `settings` names; `auto` probes Ollama and falls back to `local`."""
    say = notice or _stderr_notice
    if settings.backend == "stub":
        return StubBackend(settings.options)
    if settings.backend == "ollama":
        return OllamaBackend(
            settings.model or DEFAULT_OLLAMA_MODEL,
            host=settings.ollama_host,
            client=client,
            options=settings.options,
            retry=settings.retry,
        )
    if settings.backend == "openai":
        return OpenAIBackend(
            settings.model,
            base_url=settings.openai_base_url,
            client=client,
            options=settings.options,
            retry=settings.retry,
            api_key=settings.openai_api_key,
        )
    if settings.backend == "local":
        return _local_backend(settings, client)
    return _auto_backend(settings, client, say)


def _local_backend(settings: Settings, client: httpx.Client | None) -> Backend:
    return LocalBackend(client=client, options=settings.options, retry=settings.retry)


class LocalBackend:
    """SmolLM2-135M in an in-process llama.cpp server, started on the first request.

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
    ) -> None:
        from attest.local import file_digest, gguf_path, require_xllamacpp

        require_xllamacpp()
        path = gguf_path()
        self.model = path.stem
        self.options = dict(options or Settings().options)
        self._digest = file_digest(path)
        self._client = client
        self._retry = retry
        self._inner: OpenAIBackend | None = None

    def digest(self) -> str:
        return self._digest

    def chat_json(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> ChatResponse:
        return self._server_backend().chat_json(messages, schema)

    def _server_backend(self) -> OpenAIBackend:
        if self._inner is None:
            from attest.local import shared_server

            server: LocalServer = shared_server()
            self._inner = OpenAIBackend(
                self.model,
                base_url=server.base_url,
                client=self._client,
                options=self.options,
                retry=self._retry,
                digest=self._digest,
                kind="local",
            )
        return self._inner

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


def _auto_backend(settings: Settings, client: httpx.Client | None, say: Callable[[str], None]) -> Backend:
    model = settings.model or DEFAULT_OLLAMA_MODEL
    quick = replace(settings.retry, attempts=1, timeout_s=2.0)
    probe = OllamaBackend(
        model, host=settings.ollama_host, client=client or _new_client(settings.ollama_host), retry=quick
    )
    try:
        probe.digest()
    except BackendError as exc:
        say(
            f"attest: Ollama is not usable at {settings.ollama_host} ({exc.cause}); using the local backend, "
            "SmolLM2-135M, which proves the plumbing, not quality"
        )
        return _local_backend(replace(settings, model=""), client)
    finally:
        if client is None:
            probe.close()
    say(f"attest: using Ollama at {settings.ollama_host} with {model}")
    return OllamaBackend(
        model, host=settings.ollama_host, client=client, options=settings.options, retry=settings.retry
    )


def _stderr_notice(line: str) -> None:
    print(line, file=sys.stderr)


_default_chat: ChatJSON | None = None


def default_chat_json() -> ChatJSON:
    """The production backend from the environment (ATTEST_BACKEND, ATTEST_MODEL, ...), built once."""
    global _default_chat
    if _default_chat is None:
        _default_chat = make_backend(Settings.resolve()).chat_json
    return _default_chat


def ask(messages: Sequence[Message], model: type[T], chat_json: ChatJSON | None = None) -> T:
    """Send rendered messages under `model`'s schema and return the validated answer."""
    chat = chat_json or default_chat_json()
    return parse_answer(chat(messages, schema_of(model)).text, model)
