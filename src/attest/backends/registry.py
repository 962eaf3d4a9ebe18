"""The backend registry: one dict from kind to factory, read by `make_backend` and every `--backend`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from attest.backends.auto import make_auto
from attest.backends.local import make_local
from attest.backends.ollama import make_ollama
from attest.backends.openai import make_openai
from attest.backends.settings import Settings
from attest.backends.stub import StubBackend
from attest.backends.types import Backend
from attest.errors import AttestError

if TYPE_CHECKING:
    import httpx

__all__ = ["KINDS", "REGISTRY", "Factory", "Notice", "make_backend"]

Notice = Callable[[str], None]
Factory = Callable[[Settings, "httpx.Client | None", Notice], Backend]

REGISTRY: dict[str, Factory] = {
    "auto": make_auto,
    "ollama": lambda settings, client, _say: make_ollama(settings, client),
    "openai": lambda settings, client, _say: make_openai(settings, client),
    "local": lambda settings, client, _say: make_local(settings, client),
    "stub": lambda settings, _client, _say: StubBackend(settings.options, settings.stub_answer),
}
KINDS: tuple[str, ...] = tuple(REGISTRY)


def make_backend(settings: Settings, client: httpx.Client | None = None, *, notice: Notice | None = None) -> Backend:
    """Build the backend `settings` names, or raise one line listing the known kinds.

    No network I/O happens here except for `auto`, whose whole job is to probe Ollama.
    """
    factory = REGISTRY.get(settings.backend)
    if factory is None:
        raise AttestError(f"unknown backend {settings.backend!r}: choose one of {', '.join(KINDS)}")
    return factory(settings, client, notice or _stderr_notice)


def _stderr_notice(line: str) -> None:
    print(line, file=sys.stderr)
