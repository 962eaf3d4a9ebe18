"""What a stored answer is keyed by and what it holds: the same for every store.

Key = sha256 of the canonical JSON of backend kind, base model, model digest,
rendered messages, JSON schema, options and sample index. The URL, the API key,
the case id and the time are not in the key. An `Entry` is the answer with its
provenance (latency, tokens, when, and which worker and model server produced it),
stored as JSON, never pickle: a shared store must not be able to run code.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from attest.backends.types import Backend, ChatResponse, Message

__all__ = [
    "ANSWER_BYTES",
    "SEEDING",
    "Entry",
    "Identity",
    "canonical_json",
    "entry_from_json",
    "entry_from_text",
    "request_key",
    "request_seed",
    "samples_randomly",
    "this_worker",
]


def canonical_json(value: object) -> str:
    """JSON with sorted keys and no whitespace: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


# What Entry's fields must hold; valid JSON of the right keys but other types is corrupt too.
_ENTRY_TYPES: dict[str, type | tuple[type, ...]] = {
    "text": str,
    "latency_s": (int, float),
    "prompt_tokens": (int, type(None)),
    "completion_tokens": (int, type(None)),
    "model": str,
    "digest": str,
    "created": (int, float),
}
_OPTIONAL_TYPES: dict[str, type] = {"worker": str, "server": str}  # absent in answers stored before they existed
# Answers are untrusted (a shared store, a copied cache): an answer's JSON over this many bytes is
# never parsed (a miss with a warning), and each number must lie in its range.
ANSWER_BYTES = 4 << 20
_RANGES: dict[str, tuple[float, float]] = {
    "latency_s": (0.0, 1e7),
    "prompt_tokens": (0, 10**9),
    "completion_tokens": (0, 10**9),
    "created": (0.0, 1e11),
}


@dataclass(frozen=True)
class Identity:
    """Everything about the model side of a request that can change the answer."""

    kind: str
    model: str
    digest: str
    options: Mapping[str, Any]

    @classmethod
    def of(cls, backend: Backend) -> Identity:
        return cls(backend.kind, backend.model, backend.digest(), dict(backend.options))


# How a sampling request's seed is chosen (`request_seed`); in the key of every sampling request.
SEEDING = "base+request+sample/v1"


def samples_randomly(options: Mapping[str, Any]) -> bool:
    """Whether the options make the model sample (a temperature above 0), so the seed changes the answer."""
    temperature = options.get("temperature", 0)
    return isinstance(temperature, int | float) and temperature > 0


def request_key(identity: Identity, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> str:
    """sha256 hex of the canonical request: the cache key."""
    payload: dict[str, Any] = {
        "backend": identity.kind,
        "model": identity.model,
        "digest": identity.digest,
        "messages": list(messages),
        "schema": schema,
        "options": identity.options,
        "sample": sample,
    }
    if samples_randomly(identity.options):
        payload["seeding"] = SEEDING  # the seed sent is derived from the request (request_seed)
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def request_seed(
    options: Mapping[str, Any], messages: Sequence[Message], schema: Mapping[str, Any], sample: int
) -> int | None:
    """The seed to send with sample `sample` of this request; None: send the options' own.

    A greedy request (temperature 0) keeps the options' seed, which changes nothing.
    A sampling request gets base + h + sample, where h comes from the rendered request
    itself: one base seed for a whole run would draw every case from the same random
    stream, and two runs would then differ as wholes (a run-level effect the paired
    per-case statistics do not model). With h, each case's draws are its own, repeats
    of a case still differ by their sample index, and the seed is fixed by the key.
    """
    if not samples_randomly(options):
        return None if sample == 0 else _base_seed(options) + sample
    h = int(hashlib.sha256(canonical_json([list(messages), schema]).encode("utf-8")).hexdigest()[:7], 16)
    return (_base_seed(options) + h + sample) % 2**31


def _base_seed(options: Mapping[str, Any]) -> int:
    seed = options.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def this_worker() -> str:
    """`user@host pid N`: who generates an answer, as the report counts it (never trusted for a decision)."""
    import getpass  # here: only a generating run asks who it is
    import socket

    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()} pid {os.getpid()}"


@dataclass(frozen=True)
class Entry(ChatResponse):
    """A stored answer: the response as the model gave it, when it was stored, and who produced it.

    `worker` is `user@host pid N`, `server` the model server's URL without credentials
    (or the backend kind when there is none); both are "" in answers stored before them.
    """

    created: float
    worker: str = ""
    server: str = ""

    @classmethod
    def of(cls, response: ChatResponse, *, worker: str = "", server: str = "") -> Entry:
        fields = {k: v for k, v in asdict(response).items() if k not in ("created", "worker", "server")}
        return cls(**fields, created=time.time(), worker=worker, server=server)


def entry_from_json(raw: object) -> Entry | str:
    """The Entry a stored JSON value holds, or why it is not one (unexpected shape, wrong types)."""
    if not isinstance(raw, dict):
        return f"unexpected shape: {type(raw).__name__}, not an object"
    try:
        entry = Entry(**raw)
    except TypeError as exc:
        return f"unexpected shape: {exc}"
    wrong = [k for k, kind in _ENTRY_TYPES.items() if not isinstance(raw[k], kind) or isinstance(raw[k], bool)]
    wrong += [k for k, kind in _OPTIONAL_TYPES.items() if k in raw and not isinstance(raw[k], kind)]
    if wrong:
        return f"unexpected shape: wrong type for {', '.join(wrong)}"
    bad = [k for k, (low, high) in _RANGES.items() if raw[k] is not None and not low <= raw[k] <= high]
    if bad:
        return f"out of range: {', '.join(f'{k}={raw[k]!r:.40}' for k in bad)}"
    return entry


def entry_from_text(text: str | bytes) -> Entry | str:
    """The Entry a stored JSON text holds, or why not: over ANSWER_BYTES, not JSON, nested too deep,
    a number that is not finite, or not an Entry (`entry_from_json`)."""
    if len(text) > ANSWER_BYTES:
        return f"{len(text)} bytes, over the {ANSWER_BYTES}-byte answer cap"
    try:
        raw = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        return "nested too deep"
    except ValueError as exc:
        return f"not JSON ({str(exc)[:80]})"
    return entry_from_json(raw)


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"number {literal[:20]} is out of range")
    return value


def _no_constant(literal: str) -> float:
    raise ValueError(f"{literal} is not a number")
