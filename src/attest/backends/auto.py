"""The `auto` backend (the eval default): Ollama if it answers at OLLAMA_HOST, else `local`.

Either way it says which, and why, in one notice line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from attest.backends.local import make_local
from attest.backends.ollama import OllamaBackend, make_ollama
from attest.backends.settings import DEFAULT_OLLAMA_MODEL, Settings
from attest.backends.transport import new_client
from attest.backends.types import Backend, BackendError

if TYPE_CHECKING:
    import httpx

__all__ = ["make_auto"]


def make_auto(settings: Settings, client: httpx.Client | None, say: Callable[[str], None]) -> Backend:
    """Probe Ollama's `/api/tags` once (one try, 2 s); use Ollama if it has the model, else `local`."""
    model = settings.model or DEFAULT_OLLAMA_MODEL
    quick = replace(settings.retry, attempts=1, timeout_s=2.0)
    probe = OllamaBackend(model, host=settings.ollama, client=client or new_client(settings.ollama_host), retry=quick)
    try:
        probe.digest()
    except BackendError as exc:
        say(
            f"attest: Ollama is not usable at {settings.ollama_host} ({exc.cause}); using the local backend, "
            "SmolLM2-135M, which proves the plumbing, not quality"
        )
        return make_local(replace(settings, model=""), client)
    finally:
        if client is None:
            probe.close()
    say(f"attest: using Ollama at {settings.ollama_host} with {model}")
    return make_ollama(replace(settings, model=model), client)
