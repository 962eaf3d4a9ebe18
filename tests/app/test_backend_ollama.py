"""The Ollama backend over `httpx.MockTransport`, answering in Ollama's documented formats."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from attest.answers import schema_of
from attest.backends.ollama import OllamaBackend
from attest.backends.registry import make_backend
from attest.backends.retry import RetryPolicy
from attest.backends.settings import DEFAULT_OLLAMA_MODEL, Settings
from attest.backends.types import BackendError
from attest.errors import AttestError
from attest.features import ItemTags, tag_messages

Handler = Callable[[httpx.Request], httpx.Response]

HOST = "http://127.0.0.1:11434"
DIGEST = "7f6a57943a88ef021326428676fe749d38e82448a858433f41dae5e05ac39963"  # /api/tags gives bare hex
MESSAGES = tag_messages(
    "Pd-catalysed C-N coupling at room temperature",
    "A new ligand lets aryl chlorides couple with amines without heating.",
)
SCHEMA = schema_of(ItemTags)
ANSWER = '{"tags": ["catalysis", "organic-synthesis"]}'
NO_WAIT = RetryPolicy(attempts=3, backoff_s=0.0, timeout_s=5.0, max_wait_s=0.0)


def _chat_body(content: str = ANSWER, model: str = DEFAULT_OLLAMA_MODEL) -> dict[str, Any]:
    return {
        "model": model,
        "created_at": "2025-06-12T09:41:07.203412Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": "stop",
        "done": True,
        "total_duration": 1843275100,
        "load_duration": 21493300,
        "prompt_eval_count": 612,
        "prompt_eval_duration": 402118000,
        "eval_count": 14,
        "eval_duration": 1399664000,
    }


def _tags_body(*names: str) -> dict[str, Any]:
    return {
        "models": [
            {
                "name": name,
                "model": name,
                "modified_at": "2025-06-10T17:02:11.91539Z",
                "size": 7162394016,
                "digest": DIGEST if name == DEFAULT_OLLAMA_MODEL else "0d4e5f" + name,
                "details": {
                    "format": "gguf",
                    "family": "gemma4",
                    "parameter_size": "5.1B",
                    "quantization_level": "Q4_K_M",
                },
            }
            for name in names
        ]
    }


class FakeOllama:
    """A MockTransport handler that plays Ollama: a script of /api/chat replies, and /api/tags."""

    def __init__(
        self, *chat_replies: httpx.Response | Exception, tags: tuple[str, ...] = (DEFAULT_OLLAMA_MODEL,)
    ) -> None:
        self.replies = list(chat_replies) or [httpx.Response(200, json=_chat_body())]
        self.tags = tags
        self.chat_requests: list[httpx.Request] = []
        self.chat_times: list[float] = []
        self.tags_requests = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            self.tags_requests += 1
            return httpx.Response(200, json=_tags_body(*self.tags))
        assert request.method == "POST" and request.url.path == "/api/chat", request.url
        self.chat_requests.append(request)
        self.chat_times.append(time.monotonic())
        reply = self.replies[min(len(self.chat_requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply

    @property
    def calls(self) -> int:
        return len(self.chat_requests)

    def body(self, n: int = 0) -> dict[str, Any]:
        data = json.loads(self.chat_requests[n].content)
        assert isinstance(data, dict)
        return data


def _backend(handler: Handler, retry: RetryPolicy = NO_WAIT, **kwargs: Any) -> OllamaBackend:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return OllamaBackend(host=HOST, client=client, retry=retry, **kwargs)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": message}, headers=headers)


def _assert_one_line(err: BackendError) -> str:
    text = str(err)
    assert "\n" not in text
    return text


# --- the request and the answer -------------------------------------------------------


def test_request_body_is_ollama_chat_with_schema_as_format() -> None:
    fake = FakeOllama()
    _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert fake.chat_requests[0].url == f"{HOST}/api/chat"
    body = fake.body()
    assert body["model"] == "gemma4:e2b"
    assert body["messages"] == MESSAGES
    assert body["stream"] is False
    assert body["format"] == SCHEMA
    assert body["options"] == {"temperature": 0.0, "seed": 42, "num_predict": 400}


def test_options_are_passed_through_and_max_tokens_becomes_num_predict() -> None:
    fake = FakeOllama()
    _backend(fake, options={"temperature": 0.7, "top_k": 20, "max_tokens": 64}).chat_json(MESSAGES, SCHEMA)
    assert fake.body()["options"] == {"temperature": 0.7, "top_k": 20, "num_predict": 64}


def test_a_per_request_seed_replaces_the_options_seed() -> None:
    fake = FakeOllama()
    backend = _backend(fake)
    backend.chat_json(MESSAGES, SCHEMA, seed=45)
    assert fake.body()["options"]["seed"] == 45
    assert backend.options["seed"] == 42  # the backend's own options are unchanged


def test_response_fields_come_from_chat_and_tags() -> None:
    fake = FakeOllama()
    resp = _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert resp.text == ANSWER
    assert (resp.prompt_tokens, resp.completion_tokens) == (612, 14)
    assert resp.model == "gemma4:e2b"
    assert resp.digest == DIGEST
    assert resp.latency_s >= 0.0


def test_digest_is_fetched_once_per_backend() -> None:
    fake = FakeOllama()
    backend = _backend(fake)
    first = backend.chat_json(MESSAGES, SCHEMA)
    second = backend.chat_json(MESSAGES, SCHEMA)
    assert first.digest == second.digest == backend.digest()
    assert fake.tags_requests == 1


def test_untagged_model_name_matches_its_latest_tag() -> None:
    fake = FakeOllama(httpx.Response(200, json=_chat_body(model="qwen3:latest")), tags=("gemma4:e2b", "qwen3:latest"))
    resp = _backend(fake, model="qwen3").chat_json(MESSAGES, SCHEMA)
    assert resp.digest == "0d4e5fqwen3:latest"


def test_missing_token_counts_are_none_not_a_crash() -> None:
    body = _chat_body()
    del body["prompt_eval_count"], body["eval_count"]
    resp = _backend(FakeOllama(httpx.Response(200, json=body))).chat_json(MESSAGES, SCHEMA)
    assert (resp.prompt_tokens, resp.completion_tokens) == (None, None)


def test_answer_without_message_content_is_a_backend_error() -> None:
    body = _chat_body()
    del body["message"]
    fake = FakeOllama(httpx.Response(200, json=body))
    with pytest.raises(BackendError, match=r"without message\.content after 3 attempts: start it with"):
        _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert fake.calls == 3


def test_an_answerless_reply_is_retried_and_the_next_answer_used() -> None:
    body = _chat_body()
    del body["message"]
    fake = FakeOllama(httpx.Response(200, json=body), httpx.Response(200, json=_chat_body()))
    assert _backend(fake).chat_json(MESSAGES, SCHEMA).text == ANSWER
    assert fake.calls == 2


# --- faults ---------------------------------------------------------------------------


def test_connection_refused_says_where_and_what_to_do() -> None:
    fake = FakeOllama(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(BackendError) as info:
        _backend(fake).chat_json(MESSAGES, SCHEMA)
    text = _assert_one_line(info.value)
    assert f"{HOST}/api/chat" in text
    assert "connection refused" in text
    assert "`ollama serve`" in text
    assert "--backend local" in text
    assert info.value.url == f"{HOST}/api/chat"
    assert fake.calls == NO_WAIT.attempts


def test_model_not_pulled_says_ollama_pull_and_is_not_retried() -> None:
    fake = FakeOllama(_error(404, "model 'gemma4:e2b' not found, try pulling it first"))
    with pytest.raises(BackendError) as info:
        _backend(fake).chat_json(MESSAGES, SCHEMA)
    text = _assert_one_line(info.value)
    assert "`ollama pull gemma4:e2b`" in text
    assert fake.calls == 1


def test_model_missing_from_tags_says_ollama_pull() -> None:
    fake = FakeOllama(tags=("llama3.2:3b",))
    with pytest.raises(BackendError, match=r"`ollama pull gemma4:e2b`"):
        _backend(fake).chat_json(MESSAGES, SCHEMA)


def test_bad_request_is_not_retried_and_shows_ollamas_reason() -> None:
    fake = FakeOllama(_error(400, "invalid JSON schema in format"))
    with pytest.raises(BackendError) as info:
        _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert "400: invalid JSON schema in format" in _assert_one_line(info.value)
    assert fake.calls == 1


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_server_errors_are_retried_exactly_attempts_times(status: int) -> None:
    fake = FakeOllama(_error(status, "llama runner process has terminated: signal: killed"))
    retry = RetryPolicy(attempts=4, backoff_s=0.0, timeout_s=5.0)
    with pytest.raises(BackendError) as info:
        _backend(fake, retry=retry).chat_json(MESSAGES, SCHEMA)
    text = _assert_one_line(info.value)
    assert fake.calls == 4
    assert f"({status}: llama runner process has terminated" in text
    assert "after 4 attempts" in text
    assert "`ollama serve`" in text


def test_a_retry_that_succeeds_returns_the_answer() -> None:
    fake = FakeOllama(_error(503, "server busy"), httpx.Response(200, json=_chat_body()))
    resp = _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert resp.text == ANSWER
    assert fake.calls == 2


def test_retry_after_is_honoured_but_capped() -> None:
    # Retry-After asks for 30 s; the policy caps waits at 0.05 s and has no backoff of its own,
    # so any gap between tries comes from Retry-After, and a gap near 30 s means no cap.
    fake = FakeOllama(_error(503, "server busy", {"Retry-After": "30"}))
    retry = RetryPolicy(attempts=3, backoff_s=0.0, timeout_s=5.0, max_wait_s=0.05)
    start = time.monotonic()
    with pytest.raises(BackendError):
        _backend(fake, retry=retry).chat_json(MESSAGES, SCHEMA)
    gaps = [b - a for a, b in zip(fake.chat_times, fake.chat_times[1:], strict=False)]
    assert fake.calls == 3
    assert all(gap >= 0.05 for gap in gaps), gaps
    assert time.monotonic() - start < 20.0  # uncapped: 60 s of Retry-After; loose for a busy machine


def test_wait_before_doubles_backoff_honours_retry_after_and_caps_both() -> None:
    policy = RetryPolicy(backoff_s=0.5, max_wait_s=3.0)
    assert [policy.wait_before(n, None) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert policy.wait_before(1, "2") == 2.0
    assert policy.wait_before(1, "120") == 3.0
    assert policy.wait_before(1, "-4") == 0.5  # meaningless: the policy's own backoff
    assert policy.wait_before(2, "nan") == 1.0
    assert policy.wait_before(2, "Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date already past


def test_timeouts_are_retried_a_bounded_number_of_times() -> None:
    fake = FakeOllama(httpx.ReadTimeout("timed out"))
    with pytest.raises(BackendError) as info:
        _backend(fake).chat_json(MESSAGES, SCHEMA)
    text = _assert_one_line(info.value)
    assert fake.calls == NO_WAIT.attempts
    assert "no answer within 5 s" in text
    assert f"after {NO_WAIT.attempts} attempts" in text


def test_timeout_setting_reaches_the_request() -> None:
    fake = FakeOllama()
    _backend(fake, retry=RetryPolicy(attempts=1, backoff_s=0.0, timeout_s=7.5)).chat_json(MESSAGES, SCHEMA)
    assert fake.chat_requests[0].extensions["timeout"]["read"] == 7.5


def test_garbled_body_is_retried_then_reported() -> None:
    fake = FakeOllama(httpx.Response(200, text="<html>502 Bad Gateway</html>"))
    with pytest.raises(BackendError, match=r"not JSON.*after 3 attempts"):
        _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert fake.calls == 3


# --- configuration --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:11500", "http://gpu-box:11500"),
        ("http://10.0.0.7:11500", "http://10.0.0.7:11500"),
        ("http://10.0.0.7:11500/", "http://10.0.0.7:11500"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:11500", "http://127.0.0.1:11500"),
        ("  127.0.0.1:11434 ", "http://127.0.0.1:11434"),
        ("http://ollama.internal", "http://ollama.internal:80"),
        ("https://ollama.internal", "https://ollama.internal:443"),
        ("[::1]:11500", "http://[::1]:11500"),
        ("http://proxy.lan:8080/ollama/", "http://proxy.lan:8080/ollama"),
    ],
)
def test_ollama_host_forms(value: str, expected: str) -> None:
    assert Settings.resolve(env={"OLLAMA_HOST": value}).ollama_host == expected


def test_ollama_host_with_a_bad_port_is_a_clear_error() -> None:
    with pytest.raises(AttestError, match="OLLAMA_HOST='gpu-box:eleven' has an invalid port"):
        Settings.resolve(env={"OLLAMA_HOST": "gpu-box:eleven"})


def test_ollama_host_defaults_to_loopback() -> None:
    assert Settings.resolve(env={}).ollama_host == "http://127.0.0.1:11434"


def test_make_backend_sends_to_the_resolved_host() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return FakeOllama()(request)

    settings = Settings.resolve(backend="ollama", env={"OLLAMA_HOST": "gpu-box:11500"}, retry=NO_WAIT)
    make_backend(settings, httpx.Client(transport=httpx.MockTransport(handler))).chat_json(MESSAGES, SCHEMA)
    assert seen[0] == "http://gpu-box:11500/api/chat"


def test_default_model_is_gemma4_e2b() -> None:
    fake = FakeOllama()
    backend = make_backend(
        Settings.resolve(backend="ollama", env={}), httpx.Client(transport=httpx.MockTransport(fake))
    )
    backend.chat_json(MESSAGES, SCHEMA)
    assert backend.model == "gemma4:e2b"
    assert fake.body()["model"] == "gemma4:e2b"


def test_attest_model_overrides_the_default_and_an_argument_overrides_both() -> None:
    fake = FakeOllama(httpx.Response(200, json=_chat_body(model="qwen3:4b")), tags=("qwen3:4b",))
    settings = Settings.resolve(backend="ollama", env={"ATTEST_MODEL": "qwen3:4b"})
    make_backend(settings, httpx.Client(transport=httpx.MockTransport(fake))).chat_json(MESSAGES, SCHEMA)
    assert fake.body()["model"] == "qwen3:4b"
    assert Settings.resolve(model="llama3.2:3b", env={"ATTEST_MODEL": "qwen3:4b"}).model == "llama3.2:3b"


def test_attest_backend_env_and_unknown_backend() -> None:
    assert Settings.resolve(env={"ATTEST_BACKEND": "stub"}).backend == "stub"
    assert Settings.resolve(backend="openai", env={"ATTEST_BACKEND": "stub"}).backend == "openai"
    known = r"choose one of auto, ollama, openai, local, stub$"
    with pytest.raises(AttestError, match=rf"^unknown backend 'olama': {known}"):
        make_backend(Settings.resolve(backend="olama", env={}))
    with pytest.raises(AttestError, match=rf"^unknown backend 'vllm': {known}"):
        make_backend(Settings(backend="vllm"))
