"""Server faults from a real local HTTP server, through the run script's entry point.

Each run has three samples; the server answers the first and then fails every request
with one fault. Transport faults, 5xx and garbled bodies are retried up to --retries
times; 404 and 401 are not retried. The run exits 1 with one error line that names the
URL and says what to do, and no traceback; the failed sample is not cached (the
answered one is); after the server heals, the rerun asks only for the two missing
samples and exits 0.

The runner's retry backoff is cut to 10 ms here so the suite stays fast; Retry-After
(1 s on the 503) is still honoured, which the elapsed time shows.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.types import Backend
from evals.store.local.cache import ResponseCache
from tests.reliability.fakeserver import CHAT_PATH, FakeServer
from tests.reliability.helpers import run_reaction, write_corpus

RETRIES = 3
TIMEOUT_S = 0.3
SAMPLES = 3

# fault -> (requests the failing sample may make, words the error line must hold)
FAULTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "500": (RETRIES, ("failed (500", "after 3 attempts", "check that the server is running")),
    "503": (RETRIES, ("failed (503", "the model is loading", "after 3 attempts")),
    "slow": (RETRIES, (f"no answer within {TIMEOUT_S:g} s", "after 3 attempts", "ATTEST_OPENAI_BASE_URL")),
    "reset": (RETRIES, ("cannot get an answer", "after 3 attempts", "check that the server is running")),
    "truncated": (RETRIES, ("cannot get an answer", "after 3 attempts", "check that the server is running")),
    "not-json": (RETRIES, ("not JSON", "after 3 attempts", "points at the right server")),
    "404": (1, ("no such model or route (404", "does not exist", "check --model and ATTEST_OPENAI_BASE_URL")),
    "401": (1, ("refused the request (401", "set ATTEST_OPENAI_API_KEY")),
    "deep": (RETRIES, ("sent JSON nested too deeply", "after 3 attempts", "points at the right server")),
    "trickle": (RETRIES, (f"no whole answer within {TIMEOUT_S:g} s", "after 3 attempts")),
    "huge": (1, ("sent an answer over the 1000000-byte limit", "ATTEST_MAX_ANSWER_BYTES")),
}
_TOTALS = {"tried": 0, "survived": 0, "requests": 0}

# evals.cli.runner.main does not close its backend's HTTP client (a process exit does); run
# in-process here, its sockets are closed by the garbage collector after each test.
pytestmark = pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        fake.slow_s = 1.0
        yield fake


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch, server: FakeServer) -> Iterator[None]:
    monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", server.url)
    server.reset_records()
    yield
    gc.collect()


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    print(
        f"\nreliability server faults: tried {_TOTALS['tried']}, survived {_TOTALS['survived']}, "
        f"requests to the failing server {_TOTALS['requests']}, failed answers cached 0 (asserted)"
    )


def _fast_backoff_backend(settings: Settings) -> Backend:
    """The backend the options name, with 10 ms backoff between retries instead of 0.5 s."""
    return make_backend(dataclasses.replace(settings, retry=dataclasses.replace(settings.retry, backoff_s=0.01)))


def _corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path, slice(SAMPLES))


def _run(cache_dir: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    extra = ("--retries", str(RETRIES), "--timeout", str(TIMEOUT_S), "--concurrency", "1")
    return run_reaction(cache_dir, corpus, capsys, *extra, backend_factory=_fast_backoff_backend)


def _cached(cache_dir: Path) -> list[bool]:
    """For each sample of the (one) run's manifest: is it in the cache?"""
    (manifest,) = (cache_dir / "runs").glob("*/manifest.json")
    keys = [s["key"] for s in json.loads(manifest.read_text(encoding="utf-8"))["samples"]]
    cache = ResponseCache(cache_dir)
    try:
        present = [cache.get(k) is not None for k in keys]
        assert cache.warnings == []
        return present
    finally:
        cache.close()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_server_fault(fault: str, server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _TOTALS["tried"] += 1
    tries, words = FAULTS[fault]
    corpus, cache_dir = _corpus(tmp_path), tmp_path / "cache"
    server.fail(fault, after=1)
    start = time.monotonic()
    code, lines = _run(cache_dir, corpus, capsys)
    elapsed = time.monotonic() - start

    assert code == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith("reaction eval: error: ") and "Traceback" not in lines[0]
    assert server.url + CHAT_PATH in lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert server.count == 1 + tries
    _TOTALS["requests"] += server.count
    assert _cached(cache_dir) == [True, False, False]
    if fault == "503":
        assert elapsed >= (RETRIES - 1) * 1.0, "Retry-After: 1 was not honoured"

    server.heal()
    first = server.count
    code, lines = _run(cache_dir, corpus, capsys)
    assert (code, lines) == (0, [])
    assert server.count - first == SAMPLES - 1
    _TOTALS["survived"] += 1


# --- the huge answer under load (issue 22, item 7) ------------------------------------------------------------
# `test_server_fault[huge]` once saw 3 requests where 2 were expected. The over-cap answer itself is never
# retried (its Content-Length is refused before the body is read, however slowly the body comes); the extra
# request was a real timeout: the fake server built its 5 MB answer per request (about 0.13 s of the server
# thread), and under load that outran the 0.3 s timeout before the first byte. The answer is now built when
# the fault is set. These tests reproduce both sides deterministically.


def test_the_huge_answer_is_built_when_the_fault_is_set_not_per_request(
    server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.fail("huge", after=1)
    built = server.huge_built
    assert server._huge is not None and server._huge[0] == server.huge_bytes  # ready before any request
    code, _ = _run(tmp_path / "cache", _corpus(tmp_path), capsys)
    assert code == 1 and server.count == 2
    assert server.huge_built == built  # no request built it again


def test_an_over_cap_answer_read_slowly_is_refused_once(
    server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The body dribbles in past the timeout (0.5 s per 64 kB): refused at its headers, never retried."""
    server.huge_chunk_s = 0.5
    try:
        server.fail("huge", after=1)
        code, lines = _run(tmp_path / "cache", _corpus(tmp_path), capsys)
    finally:
        server.huge_chunk_s = 0.0
    assert code == 1 and len(lines) == 1
    assert "over the 1000000-byte limit" in lines[0] and "attempts" not in lines[0]
    assert server.count == 2  # one good answer, the over-cap one asked once


def test_a_slow_start_is_a_timeout_and_is_retried_then_the_over_cap_answer_is_not(
    server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flake, made deterministic: the first huge answer starts after the timeout (as the per-request
    build did under load), so that attempt is a timeout and is retried; the retry's over-cap answer is not."""
    server.huge_start_s = [TIMEOUT_S * 2]
    server.fail("huge", after=1)
    code, lines = _run(tmp_path / "cache", _corpus(tmp_path), capsys)
    assert code == 1 and len(lines) == 1
    assert "over the 1000000-byte limit" in lines[0]
    assert server.count == 3  # one good answer, one timed-out attempt, one over-cap answer
    assert server.huge_start_s == []
