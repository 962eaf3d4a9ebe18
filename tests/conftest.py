"""Shared fixtures. Test doubles live in tests/fakes.py (`from tests.fakes import RecordingChat`)."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

# Property tests (tests/app/test_settings_properties.py): the same examples on every run and machine, no
# example database; `pytest --hypothesis-profile=long` searches far wider, with a database in .hypothesis/.
settings.register_profile(
    "ci", derandomize=True, database=None, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("long", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

if TYPE_CHECKING:
    from attest.backends.llamacpp import LocalServer

# Variables attest reads; a developer's shell must not change what a test sees.
ATTEST_ENV = (
    "ATTEST_BACKEND",
    "ATTEST_MODEL",
    "ATTEST_DEBUG",
    "ATTEST_TAG_PROMPT",
    "ATTEST_OPENAI_BASE_URL",
    "ATTEST_OPENAI_API_KEY",
    "ATTEST_MAX_ANSWER_BYTES",
    "ATTEST_LEASE_WAIT",
    "ATTEST_CACHE_DIR",
    "ATTEST_STORE",
    "OLLAMA_HOST",
)


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset attest's environment variables for every test (tests set what they need)."""
    for name in ATTEST_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True, scope="session")
def _own_xdg_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's own XDG cache (remembered plots, gguf digests), never the developer's; uv keeps reading
    its own cache (tests/tasks/test_task_plugin.py installs from it, offline)."""
    uv_cache = os.environ.get("UV_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        mp.setenv("UV_CACHE_DIR", uv_cache)
        yield


@pytest.fixture
def free_port() -> int:
    """A 127.0.0.1 port nobody listens on (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def attest_exe() -> Path:
    """The installed `attest` console script, beside the interpreter running the tests."""
    exe = Path(sys.executable).parent / "attest"
    if not exe.is_file():
        pytest.fail(f"no `attest` console script at {exe}: install attest into this environment (pip install -e .)")
    return exe


def _local_server_env() -> dict[str, str]:
    """One one-thread server per free core per worker: llama.cpp's threads spin, so never more than the cores.

    With N parallel workers (pytest-xdist) each worker gets cores // N servers (at least
    one) of one thread; a serial run gets one per core, the backend's own default.
    """
    from attest.backends.llamacpp import usable_cpus

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
    return {
        "ATTEST_LOCAL_THREADS": "1",
        "ATTEST_LOCAL_SLOTS": "1",
        "ATTEST_LOCAL_SERVERS": str(max(1, usable_cpus() // max(1, workers))),
    }


@pytest.fixture(scope="session", autouse=True)
def _local_server_settings() -> Iterator[None]:
    """The local servers' settings for the whole session (subprocesses inherit them)."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in _local_server_env().items():
            mp.setenv(name, value)
        yield


@pytest.fixture(scope="session")
def local_servers(_local_server_settings: None, tmp_path_factory: pytest.TempPathFactory) -> list[LocalServer]:
    """The worker's local llama.cpp servers, started once per worker and shared by every real-model test in it
    (the gguf digest memo kept out of the user's cache)."""
    from attest.backends.llamacpp import shared_servers

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-servers")))
        return shared_servers()


@pytest.fixture
def swap_task() -> Iterator[Callable[[Any], None]]:
    """Register a replacement for a task (same name) for one test; the original comes back after it."""
    from evals import tasks  # not at import: the suite's app-only tests must not load the harness

    saved = {name: tasks.get(name) for name in tasks.names()}

    def swap(task: Any) -> None:
        tasks.register(task)

    yield swap
    for name in tasks.names():
        if name not in saved:
            tasks.unregister(name)
    for task in saved.values():
        tasks.register(task)
