"""Configuration resolved once at an entry point: argument, then environment, then default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from attest.backends.endpoint import Endpoint, check_api_key, host_problem
from attest.backends.retry import RetryPolicy
from attest.backends.types import DEFAULT_OPTIONS, StubAnswer
from attest.config import checked, whole_number
from attest.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_ANSWER_BYTES",
    "DEFAULT_OLLAMA_HOST",
    "DEFAULT_OLLAMA_MODEL",
    "DEFAULT_OPENAI_BASE_URL",
    "Settings",
    "normalise_ollama_host",
    "ollama_endpoint",
]

DEFAULT_OLLAMA_MODEL = "gemma4:e2b"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080"
_OLLAMA_KINDS = ("ollama", "auto")
_OLLAMA_VALID = "use host:port, e.g. 127.0.0.1:11434, or http://host:port"
DEFAULT_MAX_ANSWER_BYTES = 1_000_000  # a schema-bound answer is a few hundred bytes; 1 MB is far beyond any


@dataclass(frozen=True)
class Settings:
    """Configuration resolved once at an entry point: argument, then environment, then default.

    `backend` is checked against the registry by `make_backend`, which lists the known
    kinds. The two endpoints keep any credentials their URLs carried out of `repr`
    and out of `ollama_host` / `openai_base_url`, which are safe to show.
    """

    backend: str = "ollama"
    model: str = ""
    ollama: Endpoint = field(default_factory=lambda: Endpoint(DEFAULT_OLLAMA_HOST))
    openai: Endpoint = field(default_factory=lambda: Endpoint(DEFAULT_OPENAI_BASE_URL))
    options: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_OPTIONS))
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    openai_api_key: str | None = field(default=None, repr=False)
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    stub_answer: StubAnswer | None = field(default=None, repr=False, compare=False)  # what `stub` answers with

    @property
    def ollama_host(self) -> str:
        return self.ollama.url

    @property
    def openai_base_url(self) -> str:
        return self.openai.url

    @classmethod
    def resolve(
        cls,
        *,
        backend: str | None = None,
        model: str | None = None,
        default_backend: str = "ollama",
        env: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        model_setting: str = "--model/ATTEST_MODEL",
    ) -> Settings:
        environ = os.environ if env is None else env
        kind = backend or environ.get("ATTEST_BACKEND") or default_backend
        # A URL is read (and a bad one refused) only for the backend that will use it.
        ollama = ollama_endpoint(environ.get("OLLAMA_HOST", DEFAULT_OLLAMA_HOST)) if kind in _OLLAMA_KINDS else None
        openai_url = environ.get("ATTEST_OPENAI_BASE_URL", "").strip() or DEFAULT_OPENAI_BASE_URL
        openai = Endpoint.parse(openai_url, "ATTEST_OPENAI_BASE_URL") if kind == "openai" else None
        return cls(
            backend=kind,
            model=_model_name(model or environ.get("ATTEST_MODEL", ""), model_setting),
            ollama=ollama or Endpoint(DEFAULT_OLLAMA_HOST),
            openai=openai or Endpoint(DEFAULT_OPENAI_BASE_URL),
            retry=retry or RetryPolicy(),
            openai_api_key=check_api_key(environ.get("ATTEST_OPENAI_API_KEY")) if kind == "openai" else None,
            max_answer_bytes=whole_number(
                "ATTEST_MAX_ANSWER_BYTES", environ.get("ATTEST_MAX_ANSWER_BYTES"), DEFAULT_MAX_ANSWER_BYTES
            ),
        )


def _model_name(name: str, setting: str) -> str:
    """The model's name, which travels in a JSON body (UTF-8): a byte the environment could not decode is refused."""
    checked(setting, "a model name, e.g. gemma4:e2b", lambda: name.encode("utf-8"))
    return name


def ollama_endpoint(host: str) -> Endpoint:
    """Read OLLAMA_HOST as Ollama does: `host`, `host:port`, `scheme://host[:port][/path]`, `[::1]:port`.

    Without a scheme the port defaults to 11434; with one, to the scheme's own port.
    0.0.0.0 (and ::), which Ollama binds to, mean this machine. Credentials in it
    (`http://user:pass@host`) are kept for Basic auth and never shown.
    """
    return checked("OLLAMA_HOST", _OLLAMA_VALID, lambda: _ollama_endpoint(host))


def _ollama_endpoint(host: str) -> Endpoint:
    text = host.strip() or DEFAULT_OLLAMA_HOST
    explicit = "://" in text
    try:
        parts = urlsplit(text if explicit else "http://" + text)
        port = parts.port or (443 if parts.scheme == "https" else 80 if explicit else 11434)
    except ValueError:
        shown = f"={host!r}" if "@" not in host and "?" not in host else ""
        raise ConfigError(
            f"OLLAMA_HOST{shown} has an invalid port or host: use host:port, e.g. 127.0.0.1:11434 or [::1]:11434"
        ) from None
    problem = host_problem(parts) if parts.hostname else ""
    if problem:
        raise ConfigError(f"OLLAMA_HOST is not a usable host ({problem}): use host:port, e.g. 127.0.0.1:11434")
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::"):
        hostname = "127.0.0.1"
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + (f"[{hostname}]" if ":" in hostname else hostname)
    query = f"?{parts.query}" if parts.query else ""
    return Endpoint.parse(f"{parts.scheme}://{netloc}:{port}{parts.path}{query}", "OLLAMA_HOST", _OLLAMA_VALID)


def normalise_ollama_host(host: str) -> str:
    """OLLAMA_HOST as the base URL attest shows and sends to (credentials left out)."""
    return ollama_endpoint(host).url
