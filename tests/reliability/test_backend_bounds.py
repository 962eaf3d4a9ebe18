"""Answer bounds: a size cap on every answer (streamed, never read whole) and --timeout as a whole-answer deadline.

Against the fake server on 127.0.0.1: a 5 MB answer is refused in one line and never
cached (the cap, ATTEST_MAX_ANSWER_BYTES, defaults to 1 MB); a server that sends one
byte every 0.2 s fails at about --timeout, not when its last byte arrives a minute
later. In-process, a streamed 50 MB body shows the client stops reading at the cap.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from attest.backends.openai import OpenAIBackend
from attest.backends.retry import RetryPolicy
from attest.backends.settings import DEFAULT_MAX_ANSWER_BYTES, Settings
from attest.backends.types import BackendError
from attest.errors import ConfigError
from tests.reliability.fakeserver import ROOT, FakeServer, completion, reaction_command, script_env
from tests.reliability.helpers import write_corpus

CASES = 3
CHUNK = 1 << 16
MESSAGES = [{"role": "user", "content": "Title: t"}]
SCHEMA = {"title": "Reaction"}
_TOTALS = {"tried": 0, "survived": 0, "cached_over_cap": 0, "extra_calls": 0, "slowest_s": 0.0}


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    print(
        f"\nreliability backend bounds: tried {_TOTALS['tried']}, survived {_TOTALS['survived']}, "
        f"answers over the cap cached {_TOTALS['cached_over_cap']}, extra calls {_TOTALS['extra_calls']}, "
        f"slowest trickle run {_TOTALS['slowest_s']:.1f} s"
    )


def _corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path, slice(CASES))


def _eval(tmp_path: Path, server: FakeServer, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = reaction_command(tmp_path / "cache", "--corpus", str(_corpus(tmp_path)), "--concurrency", "1", *extra)
    return subprocess.run(
        command, cwd=ROOT, env=script_env(server.url, **env), capture_output=True, text=True, timeout=60
    )


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("reaction eval: ")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def _cache_bytes(tmp_path: Path) -> int:
    return sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*") if p.is_file())


# --- the size cap, through the run script ------------------------------------------------------


def test_an_answer_over_the_cap_is_one_line_never_cached_and_not_retried(tmp_path: Path) -> None:
    _TOTALS["tried"] += 1
    with FakeServer() as server:
        server.fail("huge", after=1)  # 5 MB: five times the default cap
        done = _eval(tmp_path, server, "--retries", "3")
        asked = server.count
        server.heal()
        rerun = _eval(tmp_path, server, "--retries", "3")
        asked_again = server.count - asked
    assert done.returncode == 1
    line = _error_line(done.stderr)
    assert f"over the {DEFAULT_MAX_ANSWER_BYTES}-byte limit" in line and "ATTEST_MAX_ANSWER_BYTES" in line, line
    assert asked == 2, "one good answer, then the huge one, asked once: it would be as big again"
    _TOTALS["extra_calls"] += asked - 2
    assert _cache_bytes(tmp_path) < DEFAULT_MAX_ANSWER_BYTES
    _TOTALS["cached_over_cap"] += int(_cache_bytes(tmp_path) >= DEFAULT_MAX_ANSWER_BYTES)
    assert rerun.returncode == 0, rerun.stderr
    assert asked_again == CASES - 1
    _TOTALS["survived"] += 1


@pytest.mark.slow
@pytest.mark.parametrize(("cap", "ok"), [("100000", False), ("1000000", True)])
def test_the_cap_is_set_by_attest_max_answer_bytes(tmp_path: Path, cap: str, ok: bool) -> None:
    _TOTALS["tried"] += 1
    with FakeServer() as server:
        server.huge_bytes = 200_000
        server.fail("huge")
        done = _eval(tmp_path, server, "--retries", "1", ATTEST_MAX_ANSWER_BYTES=cap)
    if ok:  # under the cap: a 200 kB reasoning is an answer, scored 0 for breaking the schema
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 1
        assert f"over the {cap}-byte limit" in _error_line(done.stderr)
    _TOTALS["survived"] += 1


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1e6", " "])
def test_a_bad_cap_is_one_line_naming_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^ATTEST_MAX_ANSWER_BYTES="):
        Settings.resolve(env={"ATTEST_MAX_ANSWER_BYTES": value})


def test_the_cap_defaults_to_one_megabyte() -> None:
    assert Settings.resolve(env={}).max_answer_bytes == DEFAULT_MAX_ANSWER_BYTES == 1_000_000
    assert Settings.resolve(env={"ATTEST_MAX_ANSWER_BYTES": "2500"}).max_answer_bytes == 2500


# --- the size cap, in-process: the body is streamed and reading stops at the cap -------------


class _Streamed:
    """A MockTransport handler answering with a 50 MB body in 64 kB chunks, counting the chunks read."""

    def __init__(self, *, declare_length: bool) -> None:
        self.declare_length = declare_length
        self.chunks_read = 0
        self.total = 50_000_000

    def _body(self) -> Iterator[bytes]:
        head = json.dumps(completion("x"))[:-1].encode() + b', "padding": "'
        yield head
        for _ in range(self.total // CHUNK):
            self.chunks_read += 1
            yield b"y" * CHUNK

    def __call__(self, request: httpx.Request) -> httpx.Response:
        headers = {"content-length": str(self.total)} if self.declare_length else {}
        return httpx.Response(200, headers=headers, content=self._body())


@pytest.mark.parametrize("declare_length", [False, True], ids=["chunked", "content-length"])
def test_a_streamed_answer_is_read_only_up_to_the_cap(declare_length: bool) -> None:
    handler = _Streamed(declare_length=declare_length)
    backend = OpenAIBackend(
        "m",
        client=httpx.Client(transport=httpx.MockTransport(handler)),
        retry=RetryPolicy(attempts=3, backoff_s=0.0),
        max_answer_bytes=1_000_000,
    )
    with pytest.raises(BackendError, match="over the 1000000-byte limit") as info:
        backend.chat_json(MESSAGES, SCHEMA)
    assert not info.value.retryable
    assert handler.chunks_read <= 1_000_000 // CHUNK + 2
    if declare_length:
        assert handler.chunks_read <= 1, "a declared length over the cap is refused before reading"


# --- the deadline ---------------------------------------------------------------------------------


def test_a_trickling_server_fails_at_about_the_timeout(tmp_path: Path) -> None:
    _TOTALS["tried"] += 1
    with FakeServer() as server:
        server.trickle_s = 0.2  # a ~300-byte answer would take a minute
        server.fail("trickle")
        start = time.monotonic()
        done = _eval(tmp_path, server, "--retries", "1", "--timeout", "1")
        elapsed = time.monotonic() - start
        asked = server.count
    _TOTALS["slowest_s"] = max(_TOTALS["slowest_s"], elapsed)
    assert done.returncode == 1
    line = _error_line(done.stderr)
    assert "no whole answer within 1 s" in line, line
    assert asked == 1
    assert elapsed < 40, f"the deadline is 1 s per answer; the run took {elapsed:.1f} s"  # no deadline: a minute
    assert _cache_bytes(tmp_path) < 200_000
    _TOTALS["survived"] += 1
