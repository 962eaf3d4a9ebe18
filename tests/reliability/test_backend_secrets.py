"""Secrets the backends hold: an API key with a CRLF tail, credentials in a base URL or OLLAMA_HOST, a key echoed.

Each scenario runs the reaction eval (a subprocess, as a user would) or `attest` against
the fake server on 127.0.0.1 and then searches, as bytes, every file under the cache
directory (database, WAL, value files, manifests, reports) and every captured output
stream for each secret, and for the forms a library might print it in (base64 inside
a Basic header, Python's repr with its escapes). The server's own record shows the
credential was used, so a search that finds nothing is not a search of nothing.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.types import BackendError
from tests.reliability.fakeserver import ROOT, FakeServer, reaction_answer, reaction_command, script_env
from tests.reliability.helpers import write_corpus

CASES = 2
_TOTALS = {"scenarios": 0, "runs": 0, "places_searched": 0, "leaks": 0}


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    print(
        f"\nreliability backend secrets: scenarios {_TOTALS['scenarios']}, runs {_TOTALS['runs']}, "
        f"files and streams searched {_TOTALS['places_searched']}, secrets found {_TOTALS['leaks']}"
    )


def _corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path, slice(CASES))


def _eval(tmp_path: Path, url: str, *extra: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    command = reaction_command(tmp_path / "cache", "--corpus", str(_corpus(tmp_path)), "--retries", "1", *extra)
    _TOTALS["runs"] += 1
    return subprocess.run(command, cwd=ROOT, env=script_env(url, **env), capture_output=True, timeout=60)


def _attest(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "attest.cli", *args]
    _TOTALS["runs"] += 1
    return subprocess.run(
        command, cwd=ROOT, env=script_env("http://127.0.0.1:9", **env), capture_output=True, timeout=60
    )


def _forms(secret: str) -> list[bytes]:
    """The secret as bytes, as Python's repr would show it, and stripped of surrounding whitespace."""
    forms = {secret, secret.strip(), repr(secret)[1:-1]}
    return [f.encode() for f in forms if len(f) >= 8]


def _leaks(needles: list[str], cache_dir: Path | None, outputs: list[bytes]) -> list[str]:
    """Where any needle (in any of its forms) occurs: files under `cache_dir`, and the outputs."""
    forms = [f for n in needles for f in _forms(n)]
    files = sorted(p for p in cache_dir.rglob("*") if p.is_file()) if cache_dir and cache_dir.exists() else []
    found = [str(p.name) for p in files for f in forms if f in p.read_bytes()]
    found += [f"output #{i}: {out[:300]!r}" for i, out in enumerate(outputs) for f in forms if f in out]
    _TOTALS["scenarios"] += 1
    _TOTALS["places_searched"] += len(files) + len(outputs)
    _TOTALS["leaks"] += len(found)
    return found


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# --- the API key ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("tail", ["\r", "\n", "\r\n", " \r\n"], ids=["cr", "lf", "crlf", "space-crlf"])
def test_a_key_read_from_a_crlf_env_file_is_stripped_used_and_written_nowhere(tmp_path: Path, tail: str) -> None:
    key = f"sk-test-{secrets.token_hex(16)}"
    with FakeServer() as server:
        done = _eval(tmp_path, server.url, ATTEST_OPENAI_API_KEY=key + tail)
        server.fail("401")  # echoes the Authorization header back, as careless proxies do
        refused = _eval(tmp_path / "refused", server.url, ATTEST_OPENAI_API_KEY=key + tail)
        headers = {r.headers.get("authorization") for r in server.requests}
    assert done.returncode == 0, done.stderr
    assert refused.returncode == 1 and b"refused the request (401" in refused.stderr, refused.stderr
    assert headers == {f"Bearer {key}"}
    outputs = [done.stdout, done.stderr, refused.stdout, refused.stderr]
    assert _leaks([key, f"Bearer {key}"], tmp_path, outputs) == []


@pytest.mark.parametrize("inner", ["\r", "\n", " ", "\x7f", "é"], ids=["cr", "lf", "space", "del", "non-ascii"])
def test_a_key_with_a_control_character_inside_is_refused_without_showing_it(inner: str) -> None:
    key = f"sk-test-{secrets.token_hex(8)}{inner}{secrets.token_hex(8)}"
    done = _attest("tag", "--backend", "openai", "--model", "m", "A title", "A summary", ATTEST_OPENAI_API_KEY=key)
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "ATTEST_OPENAI_API_KEY" in lines[0], done.stderr
    assert _leaks([key, *key.split(inner)], None, [done.stdout, done.stderr]) == []


def test_a_key_the_server_echoes_in_its_answer_is_not_stored(tmp_path: Path) -> None:
    key = f"sk-test-{secrets.token_hex(16)}"

    def echo(body: dict[str, Any]) -> str:
        answer = json.loads(reaction_answer(body))
        return json.dumps({**answer, "reasoning": f"You sent me {key}; {answer['reasoning']}"[:300]})

    with FakeServer(echo) as server:
        done = _eval(tmp_path, server.url, "--json", ATTEST_OPENAI_API_KEY=key)
        asked = server.count
    assert done.returncode == 0, done.stderr
    assert asked == CASES
    # the answer store only: the run's page (report.html) shows the same masked answers again
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.suffix != ".html")
    assert stored.count(b"You sent me [redacted]") == CASES, "the answers are cached, with the key masked"
    assert _leaks([key], tmp_path, [done.stdout, done.stderr]) == []


# --- credentials in ATTEST_OPENAI_BASE_URL ---------------------------------------------------


@pytest.mark.slow
def test_credentials_in_the_base_url_are_used_and_written_nowhere(tmp_path: Path) -> None:
    user, password, query_key = "alice", secrets.token_hex(12), secrets.token_hex(12)
    with FakeServer() as server:
        url = f"http://{user}:{password}@127.0.0.1:{server.port}/?api_key={query_key}"
        done = _eval(tmp_path, url)
        server.fail("401")
        refused = _eval(tmp_path / "refused", url)
        posts = [(r.path, r.headers.get("authorization")) for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert refused.returncode == 1, refused.stderr
    assert set(posts) == {(f"/v1/chat/completions?api_key={query_key}", _basic(user, password))}
    shown = f"http://127.0.0.1:{server.port}/v1/chat/completions"
    assert shown.encode() in refused.stderr
    outputs = [done.stdout, done.stderr, refused.stdout, refused.stderr]
    assert _leaks([password, query_key, _basic(user, password)], tmp_path, outputs) == []


@pytest.mark.parametrize(
    "form",
    ["http://u:{secret}@127.0.0.1:{port}", "http://{secret}@127.0.0.1:{port}/", "http://127.0.0.1:{port}?key={secret}"],
    ids=["userinfo", "token-as-user", "query"],
)
def test_credentials_in_an_unreachable_base_url_are_not_printed(free_port: int, form: str) -> None:
    secret = secrets.token_hex(12)
    url = form.format(secret=secret, port=free_port)
    argv = ["tag", "--backend", "openai", "--model", "m", "--retries", "2", "A title", "A summary"]
    done = _attest(*argv, ATTEST_OPENAI_BASE_URL=url)
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and f"http://127.0.0.1:{free_port}/v1/chat/completions" in lines[0], done.stderr
    assert "connection refused" in lines[0]
    assert _leaks([secret], None, [done.stdout, done.stderr]) == []


def test_settings_never_show_a_credential() -> None:
    secret = secrets.token_hex(12)
    env = {
        "ATTEST_OPENAI_BASE_URL": f"http://u:{secret}@gpu-box:8000/?api_key={secret}",
        "OLLAMA_HOST": f"http://u:{secret}@gpu-box:11434",
        "ATTEST_OPENAI_API_KEY": secret,
    }
    openai, ollama = Settings.resolve(backend="openai", env=env), Settings.resolve(backend="ollama", env=env)
    for settings in (openai, ollama):
        assert secret not in repr(settings) and secret not in str(settings)
    assert (openai.openai_base_url, ollama.ollama_host) == ("http://gpu-box:8000", "http://gpu-box:11434")
    assert openai.openai_api_key == secret and openai.openai.auth == ("u", secret)


# --- credentials in OLLAMA_HOST --------------------------------------------------------------

TAGS = {"models": [{"name": "gemma4:e2b", "model": "gemma4:e2b", "digest": "sha256:abc"}]}
CHAT = {"model": "gemma4:e2b", "message": {"role": "assistant", "content": '{"tags": ["catalysis"]}'}, "done": True}


def test_credentials_in_ollama_host_are_sent_as_basic_auth() -> None:
    password = secrets.token_hex(12)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=TAGS if request.url.path == "/api/tags" else CHAT)

    notices: list[str] = []
    settings = Settings.resolve(backend="auto", env={"OLLAMA_HOST": f"http://bob:{password}@127.0.0.1:11434"})
    backend = make_backend(settings, httpx.Client(transport=httpx.MockTransport(handler)), notice=notices.append)
    backend.chat_json([{"role": "user", "content": "Title: t"}], {"title": "ItemTags"})
    assert sorted(r.url.path for r in seen) == ["/api/chat", "/api/tags", "/api/tags"]  # probe, chat, digest
    assert {r.headers.get("authorization") for r in seen} == {_basic("bob", password)}
    assert {r.url.userinfo for r in seen} == {b""}
    assert notices == ["attest: using Ollama at http://127.0.0.1:11434 with gemma4:e2b"]


def test_ollama_errors_never_show_its_credentials() -> None:
    password = secrets.token_hex(12)

    def handler(request: httpx.Request) -> httpx.Response:
        got = request.headers.get("authorization", "")
        return httpx.Response(401, json={"error": f"unauthorized: {got} {password}"})

    settings = Settings.resolve(backend="ollama", env={"OLLAMA_HOST": f"http://bob:{password}@127.0.0.1:11434"})
    backend = make_backend(settings, httpx.Client(transport=httpx.MockTransport(handler)))
    with pytest.raises(BackendError) as info:
        backend.chat_json([{"role": "user", "content": "x"}], {"title": "ItemTags"})
    text = str(info.value)
    assert "refused the request (401" in text
    assert _leaks([password, _basic("bob", password)], None, [text.encode(), repr(vars(info.value)).encode()]) == []


def test_an_unreachable_ollama_host_with_credentials_prints_none(free_port: int) -> None:
    password = secrets.token_hex(12)
    host = f"http://bob:{password}@127.0.0.1:{free_port}"
    done = _attest("tag", "--backend", "ollama", "--retries", "1", "A title", "A summary", OLLAMA_HOST=host)
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and f"http://127.0.0.1:{free_port}/api/chat" in lines[0], done.stderr
    assert _leaks([password], None, [done.stdout, done.stderr]) == []
