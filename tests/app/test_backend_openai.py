"""The OpenAI-compatible backend over `httpx.MockTransport`, answering in OpenAI's documented shapes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from attest.answers import schema_of
from attest.backends.openai import OpenAIBackend
from attest.backends.registry import make_backend
from attest.backends.retry import RetryPolicy
from attest.backends.settings import Settings
from attest.backends.types import BackendError
from attest.simulate import Reaction, reaction_messages

BASE = "http://127.0.0.1:8080"
KEY = "sk-test-4f9c2b7e1d0a8e6c5b3a"
MESSAGES = reaction_messages(
    "An ML engineer who trains and evaluates transformer models.",
    "I read papers about optimisers, scaling and benchmark contamination.",
    "Stable AdamW without learning-rate warmup via update-norm clipping",
    "Clipping the per-step update norm removes the need for warmup in 1B-parameter runs.",
)
SCHEMA = schema_of(Reaction)
ANSWER = '{"verdict": true, "confidence": 4, "reasoning": "An optimiser paper, which is one of his stated interests."}'
NO_WAIT = RetryPolicy(attempts=3, backoff_s=0.0, timeout_s=5.0, max_wait_s=0.0)


def _completion(content: str = ANSWER) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "qwen2.5-7b-instruct",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 287, "completion_tokens": 31, "total_tokens": 318},
        "system_fingerprint": "fp_b1442c4d2e",
    }


def _openai_error(status: int, message: str, code: str | None = None) -> httpx.Response:
    return httpx.Response(
        status, json={"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    )


class FakeServer:
    """A MockTransport handler that plays an OpenAI-compatible server from a script of replies."""

    def __init__(self, *replies: httpx.Response | Exception) -> None:
        self.replies = list(replies) or [httpx.Response(200, json=_completion())]
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "POST" and request.url.path == "/v1/chat/completions", request.url
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply

    @property
    def calls(self) -> int:
        return len(self.requests)

    def body(self, n: int = 0) -> dict[str, Any]:
        data = json.loads(self.requests[n].content)
        assert isinstance(data, dict)
        return data


def _backend(fake: FakeServer, retry: RetryPolicy = NO_WAIT, **kwargs: Any) -> OpenAIBackend:
    client = httpx.Client(transport=httpx.MockTransport(fake))
    return OpenAIBackend(
        kwargs.pop("model", "qwen2.5-7b-instruct"), base_url=BASE, client=client, retry=retry, **kwargs
    )


def _fail(fake: FakeServer, **kwargs: Any) -> str:
    with pytest.raises(BackendError) as info:
        _backend(fake, **kwargs).chat_json(MESSAGES, SCHEMA)
    text = str(info.value)
    assert "\n" not in text
    return text


# --- the request and the answer -------------------------------------------------------


def test_request_uses_json_schema_response_format() -> None:
    fake = FakeServer()
    _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert fake.requests[0].url == f"{BASE}/v1/chat/completions"
    body = fake.body()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Reaction", "schema": SCHEMA, "strict": True},
    }
    assert body["messages"] == MESSAGES
    assert body["model"] == "qwen2.5-7b-instruct"
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 42, 400)


def test_a_per_request_seed_replaces_the_options_seed() -> None:
    fake = FakeServer()
    backend = _backend(fake)
    backend.chat_json(MESSAGES, SCHEMA, seed=44)
    assert fake.body()["seed"] == 44
    assert backend.options["seed"] == 42


def test_model_is_left_out_when_not_set() -> None:
    fake = FakeServer()
    _backend(fake, model="").chat_json(MESSAGES, SCHEMA)
    assert "model" not in fake.body()


def test_response_fields_come_from_the_documented_shape() -> None:
    resp = _backend(FakeServer()).chat_json(MESSAGES, SCHEMA)
    assert resp.text == ANSWER
    assert (resp.prompt_tokens, resp.completion_tokens) == (287, 31)
    assert resp.digest == "fp_b1442c4d2e"
    assert resp.model == "qwen2.5-7b-instruct"
    assert resp.latency_s >= 0.0


def test_model_falls_back_to_the_servers_name_and_a_given_digest_wins() -> None:
    client = httpx.Client(transport=httpx.MockTransport(FakeServer()))
    backend = OpenAIBackend("", base_url=BASE, client=client, retry=NO_WAIT, digest="sha256:abc123")
    resp = backend.chat_json(MESSAGES, SCHEMA)
    assert resp.model == "qwen2.5-7b-instruct"
    assert resp.digest == backend.digest() == "sha256:abc123"


@pytest.mark.parametrize(
    "body",
    [
        {"choices": []},
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]},
        {"object": "chat.completion"},
    ],
    ids=["no-choices", "null-content", "no-choices-key"],
)
def test_answer_without_content_is_a_backend_error(body: dict[str, Any]) -> None:
    assert "without choices[0].message.content" in _fail(FakeServer(httpx.Response(200, json=body)))


# --- the API key ----------------------------------------------------------------------


def test_api_key_is_sent_as_bearer_token() -> None:
    fake = FakeServer()
    _backend(fake, api_key=KEY).chat_json(MESSAGES, SCHEMA)
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_no_authorization_header_without_a_key() -> None:
    fake = FakeServer()
    _backend(fake).chat_json(MESSAGES, SCHEMA)
    assert "authorization" not in fake.requests[0].headers


def test_make_backend_reads_the_key_from_the_environment() -> None:
    fake = FakeServer()
    env = {"ATTEST_OPENAI_BASE_URL": "http://127.0.0.1:8000/", "ATTEST_OPENAI_API_KEY": KEY}
    settings = Settings.resolve(backend="openai", env=env, retry=NO_WAIT)
    assert KEY not in repr(settings)
    make_backend(settings, httpx.Client(transport=httpx.MockTransport(fake))).chat_json(MESSAGES, SCHEMA)
    assert fake.requests[0].url == "http://127.0.0.1:8000/v1/chat/completions"
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_api_key_appears_in_no_response_or_backend_repr() -> None:
    backend = _backend(FakeServer(), api_key=KEY)
    resp = backend.chat_json(MESSAGES, SCHEMA)
    for shown in (repr(resp), str(resp), repr(backend), str(backend), repr(vars(resp))):
        assert KEY not in shown


@pytest.mark.parametrize(
    "reply",
    [
        _openai_error(401, "Incorrect API key provided: sk-test-****8e6c5b3a.", "invalid_api_key"),
        _openai_error(500, "The server had an error while processing your request."),
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.Response(200, text="<html><body>Bad gateway</body></html>"),
    ],
    ids=["401", "500", "refused", "not-json"],
)
def test_api_key_appears_in_no_error_message(reply: httpx.Response | Exception) -> None:
    with pytest.raises(BackendError) as info:
        _backend(FakeServer(reply), api_key=KEY).chat_json(MESSAGES, SCHEMA)
    assert KEY not in str(info.value)
    assert KEY not in repr(info.value)
    assert KEY not in repr(vars(info.value))


# --- faults ---------------------------------------------------------------------------


def test_401_is_not_retried_and_says_which_key_to_set() -> None:
    fake = FakeServer(_openai_error(401, "Incorrect API key provided: sk-test-****8e6c5b3a.", "invalid_api_key"))
    text = _fail(fake, api_key=KEY)
    assert fake.calls == 1
    assert f"{BASE}/v1/chat/completions" in text
    assert "401: Incorrect API key provided" in text
    assert "ATTEST_OPENAI_API_KEY" in text


def test_404_is_not_retried_and_names_model_and_base_url() -> None:
    fake = FakeServer(_openai_error(404, "The model `qwen2.5-7b-instruct` does not exist.", "model_not_found"))
    text = _fail(fake)
    assert fake.calls == 1
    assert "404: The model `qwen2.5-7b-instruct` does not exist." in text
    assert "--model" in text and "ATTEST_OPENAI_BASE_URL" in text


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_retried_exactly_attempts_times(status: int) -> None:
    fake = FakeServer(_openai_error(status, "The server had an error while processing your request."))
    text = _fail(fake, retry=RetryPolicy(attempts=4, backoff_s=0.0, timeout_s=5.0))
    assert fake.calls == 4
    assert f"({status}: The server had an error" in text
    assert "after 4 attempts" in text
    assert "ATTEST_OPENAI_BASE_URL" in text


def test_5xx_then_success_returns_the_answer() -> None:
    fake = FakeServer(_openai_error(502, "upstream connect error"), httpx.Response(200, json=_completion()))
    assert _backend(fake).chat_json(MESSAGES, SCHEMA).text == ANSWER
    assert fake.calls == 2


def test_non_json_body_is_retried_then_reported_clearly() -> None:
    fake = FakeServer(httpx.Response(200, text="<!doctype html><title>Welcome to nginx!</title>"))
    text = _fail(fake)
    assert fake.calls == NO_WAIT.attempts
    assert "not JSON" in text
    assert f"{BASE}/v1/chat/completions" in text
    assert "after 3 attempts" in text


def test_connection_refused_names_the_url() -> None:
    fake = FakeServer(httpx.ConnectError("[Errno 111] Connection refused"))
    text = _fail(fake)
    assert fake.calls == NO_WAIT.attempts
    assert f"cannot get an answer from the server at {BASE}/v1/chat/completions (connection refused)" in text


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_refused_naming_its_status_and_location(status: int) -> None:
    """Redirects are not followed (they could carry the key elsewhere); the error names the 3xx and where
    it pointed, not "not JSON (0 bytes)", and it is not retried."""
    fake = FakeServer(httpx.Response(status, headers={"Location": "https://elsewhere.example/v1/chat/completions"}))
    text = _fail(fake)
    assert f"redirected the request ({status} to https://elsewhere.example/v1/chat/completions)" in text
    assert "not JSON" not in text
    assert fake.calls == 1
