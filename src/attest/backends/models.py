"""Which model an OpenAI-compatible server serves: `GET /v1/models`, for a cache key that names it.

The list must hold exactly one model: with none, several (Ollama's /v1 lists every
pulled model) or no answer, the caller must say which with --model. The entry's
`meta` (llama.cpp reports the weights' parameter count, size and vocabulary there)
becomes the digest, so two different files served under one name key differently.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from attest.backends.transport import Server, error_text
from attest.backends.types import BackendError

if TYPE_CHECKING:
    import httpx

__all__ = ["identify"]

_PASS_MODEL = "pass --model (or set ATTEST_MODEL) to name the model that answers, so its answers are keyed by it"
_SHOWN = 5


def identify(server: Server) -> tuple[str, str]:
    """(model id, digest or "") of the one model `server` lists, or a one-line BackendError saying to pass --model."""
    url = server.shown("/v1/models")
    try:
        data = server.get("/v1/models", _list_error, attempts=server.retry.attempts)
    except BackendError as exc:
        raise BackendError(
            f"the server at {url} cannot say which model it serves ({exc.cause}): {_PASS_MODEL}",
            url=url,
            cause=exc.cause,
        ) from None
    entries = [e for e in data.get("data") or [] if isinstance(e, dict)] if isinstance(data.get("data"), list) else []
    named = [e for e in entries if isinstance(e.get("id"), str) and e["id"].strip()]
    if len(named) != 1:
        raise BackendError(f"the server at {url} {_listing(named)}: {_PASS_MODEL}", url=url)
    entry = named[0]
    return server.mask(str(entry["id"])), _digest_of(entry.get("meta"))


def _listing(named: list[dict[str, Any]]) -> str:
    if not named:
        return "lists no model"
    ids = [str(e["id"])[:80] for e in named]
    more = f", and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else ""
    return f"lists {len(ids)} models ({', '.join(ids[:_SHOWN])}{more})"


def _digest_of(meta: object) -> str:
    if not isinstance(meta, dict) or not meta:
        return ""
    canonical = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _list_error(resp: httpx.Response, url: str) -> BackendError:
    code = resp.status_code
    retryable = code >= 500 or code == 429
    return BackendError(
        f"{code}: {error_text(resp)}", url=url, retryable=retryable, retry_after=resp.headers.get("retry-after")
    )
