"""Malformed input at the backend's edges: deep JSON, hostile Retry-After, bad URLs, nonsense settings.

Each is one line (a BackendError or ConfigError, exit 1 at an entry point), never a
traceback, and never an unbounded wait. Retry-After comes from the real fake server
on 127.0.0.1; the rest is checked in-process and through `attest` in a subprocess.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from attest.answers import ModelOutputError, parse_answer
from attest.backends.openai import OpenAIBackend
from attest.backends.retry import RetryPolicy
from attest.backends.settings import Settings
from attest.backends.types import BackendError
from attest.errors import ConfigError
from attest.simulate import Reaction
from tests.reliability.fakeserver import ROOT, FakeServer, script_env

MESSAGES = [{"role": "user", "content": "Title: t"}]
SCHEMA = {"title": "Reaction"}
DEPTH = 100_000
_TOTALS = {"tried": 0, "survived": 0, "tracebacks": 0}


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    print(
        f"\nreliability backend malformed input: tried {_TOTALS['tried']}, one line each {_TOTALS['survived']}, "
        f"tracebacks {_TOTALS['tracebacks']}"
    )


def _attest(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "attest.cli", *args]
    return subprocess.run(
        command, cwd=ROOT, env=script_env("http://127.0.0.1:9", **env), capture_output=True, text=True, timeout=60
    )


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    _TOTALS["tried"] += 1
    _TOTALS["tracebacks"] += "Traceback" in done.stderr or "internal error" in done.stderr
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("attest: error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    _TOTALS["survived"] += 1


# --- JSON nested 100k deep -----------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 500], ids=["answer", "error-body"])
def test_a_deeply_nested_body_is_one_line(status: int) -> None:
    deep = b"[" * DEPTH + b"]" * DEPTH
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=deep))
    backend = OpenAIBackend("m", client=httpx.Client(transport=transport), retry=RetryPolicy(attempts=2, backoff_s=0))
    _TOTALS["tried"] += 1
    with pytest.raises(BackendError) as info:
        backend.chat_json(MESSAGES, SCHEMA)
    assert "\n" not in str(info.value) and "after 2 attempts" in str(info.value)
    assert ("nested too deeply" if status == 200 else "failed (500") in str(info.value)
    _TOTALS["survived"] += 1


@pytest.mark.parametrize("opener", ["[", '{"a":', '{"verdict": ['], ids=["lists", "objects", "in-a-field"])
def test_a_deeply_nested_answer_is_an_unusable_answer_not_a_crash(opener: str) -> None:
    _TOTALS["tried"] += 1
    with pytest.raises(ModelOutputError) as info:
        parse_answer(opener * DEPTH, Reaction)
    assert info.value.reason == "output is not valid JSON: nested too deeply"
    _TOTALS["survived"] += 1


def test_a_deep_json_line_in_an_items_file_is_one_line(tmp_path: object) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "attest.cli", "tag", "--backend", "stub", "--file", "-"],
        input="[" * DEPTH + "\n",
        cwd=ROOT,
        env=script_env("http://127.0.0.1:9"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    _one_line(done, "<stdin>:1: not JSON (nested too deeply)")


# --- Retry-After ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["nan", "NaN", "-5", "-inf", "inf", "1e308", "99999999999", "soon", "", "0x10", "Wed, 21 Oct 2015 07:28:00 GMT"],
)
def test_any_retry_after_gives_a_bounded_wait_and_one_line(value: str) -> None:
    _TOTALS["tried"] += 1
    policy = RetryPolicy(attempts=3, backoff_s=0.01, timeout_s=5.0, max_wait_s=0.2)
    with FakeServer() as server:
        server.retry_after = value
        server.fail("503")
        backend = OpenAIBackend("m", base_url=server.url, retry=policy)
        start = time.monotonic()
        with pytest.raises(BackendError) as info:
            backend.chat_json(MESSAGES, SCHEMA)
        elapsed = time.monotonic() - start
        backend.close()
        asked = server.count
    assert asked == 3
    assert "failed (503" in str(info.value) and "after 3 attempts" in str(info.value)
    assert elapsed < 20, f"two waits capped at 0.2 s took {elapsed:.1f} s"  # uncapped: hours; loose for a busy machine
    _TOTALS["survived"] += 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", 2.0),
        (" 3 ", 3.0),
        ("120", 10.0),
        ("1e308", 10.0),
        ("inf", 10.0),
        ("nan", 0.5),
        ("-4", 0.5),
        ("-inf", 0.5),
        ("soon", 0.5),
        ("", 0.5),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
        ("Wed, 21 Oct 2999 07:28:00 GMT", 10.0),
    ],
)
def test_wait_before_reads_retry_after_sanely(value: str, expected: float) -> None:
    wait = RetryPolicy(backoff_s=0.5, max_wait_s=10.0).wait_before(1, value)
    assert math.isfinite(wait) and wait == expected


# --- bad URLs ---------------------------------------------------------------------------------

BAD_URLS = ["http://[::1", "http://[::1]:99999", "http://::1:8080", "http://[fe80::zz]:80", "ftp://gpu-box", "gpu-box"]


@pytest.mark.parametrize("url", [*BAD_URLS, "http://", "http://host:port"])
def test_a_bad_openai_base_url_is_one_line_naming_the_variable(url: str) -> None:
    done = _attest("tag", "--backend", "openai", "--model", "m", "A title", "A summary", ATTEST_OPENAI_BASE_URL=url)
    _one_line(done, "ATTEST_OPENAI_BASE_URL is not a usable URL")


@pytest.mark.parametrize("host", ["[::1", "http://[::1]:99999", "[fe80::zz]:80", "gpu-box:eleven", "http://[::1"])
def test_a_bad_ollama_host_is_one_line_naming_the_variable(host: str) -> None:
    done = _attest("tag", "--backend", "ollama", "A title", "A summary", OLLAMA_HOST=host)
    _one_line(done, "OLLAMA_HOST")


def test_a_bad_url_for_a_backend_not_in_use_is_not_an_error() -> None:
    done = _attest(
        "tag", "--backend", "stub", "A title", "A summary", ATTEST_OPENAI_BASE_URL="http://[::1", OLLAMA_HOST="[::1"
    )
    assert done.returncode == 0, done.stderr


def test_a_bad_url_s_credentials_are_not_shown() -> None:
    done = _attest(
        "tag", "--backend", "openai", "--model", "m", "t", "s", ATTEST_OPENAI_BASE_URL="http://u:sk-secret-42@[::1"
    )
    _one_line(done, "ATTEST_OPENAI_BASE_URL")
    assert "sk-secret-42" not in done.stderr


# --- settings that make no sense --------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    [
        {"attempts": 0},
        {"attempts": -1},
        {"timeout_s": -1.0},
        {"timeout_s": 0.0},
        {"timeout_s": math.nan},
        {"timeout_s": math.inf},
        {"backoff_s": -0.5},
        {"backoff_s": math.nan},
        {"max_wait_s": math.nan},
        {"max_wait_s": -1.0},
    ],
    ids=str,
)
def test_a_nonsense_retry_policy_is_refused(field: dict[str, float]) -> None:
    name = next(iter(field))
    with pytest.raises(ConfigError, match=rf"^RetryPolicy\.{name}="):
        RetryPolicy(**field)  # type: ignore[arg-type]


def test_a_sane_retry_policy_is_accepted() -> None:
    assert RetryPolicy(attempts=1, backoff_s=0.0, timeout_s=0.01, max_wait_s=0.0).attempts == 1
    assert Settings(retry=RetryPolicy(timeout_s=3.0)).retry.timeout_s == 3.0


@pytest.mark.parametrize("value", ["-1", "nan", "0", "inf"])
def test_a_nonsense_timeout_on_the_command_line_is_refused_in_one_line(value: str) -> None:
    done = _attest("tag", "--backend", "stub", f"--timeout={value}", "A title", "A summary")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "argument --timeout" in done.stderr, done.stderr
