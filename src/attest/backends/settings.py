"""Configuration resolved once at an entry point: argument, then environment, then default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from attest.backends.retry import RetryPolicy
from attest.backends.types import DEFAULT_OPTIONS
from attest.errors import AttestError

__all__ = [
    "DEFAULT_OLLAMA_HOST",
    "DEFAULT_OLLAMA_MODEL",
    "DEFAULT_OPENAI_BASE_URL",
    "Settings",
    "normalise_ollama_host",
]

DEFAULT_OLLAMA_MODEL = "gemma4:e2b"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class Settings:
    """Configuration resolved once at an entry point: argument, then environment, then default.

    `backend` is checked against the registry by `make_backend`, which lists the known kinds.
    """

    backend: str = "ollama"
    model: str = ""
    ollama_host: str = DEFAULT_OLLAMA_HOST
    openai_base_url: str = DEFAULT_OPENAI_BASE_URL
    options: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_OPTIONS))
    retry: RetryPolicy = field(default_factory=RetryPolicy)
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
        return cls(
            backend=backend or environ.get("ATTEST_BACKEND") or default_backend,
            model=model or environ.get("ATTEST_MODEL", ""),
            ollama_host=normalise_ollama_host(environ.get("OLLAMA_HOST", DEFAULT_OLLAMA_HOST)),
            openai_base_url=environ.get("ATTEST_OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL).rstrip("/"),
            retry=retry or RetryPolicy(),
            openai_api_key=environ.get("ATTEST_OPENAI_API_KEY") or None,
        )


def normalise_ollama_host(host: str) -> str:
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
