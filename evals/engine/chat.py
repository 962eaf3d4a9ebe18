"""The answers side of the pipeline: where a sample's answer comes from.

`CachedChat` answers from a cache (evals.store.protocols.Answers: the disk
`ResponseCache`, a team's PostgreSQL store, or the in-memory `MemoryCache`) and asks the
model only on a miss; `CacheOnlyChat` is the score stage's client, which raises on any miss; `unsampled` adapts a plain
`chat_json` (a backend, a test's fake) to the `SampleChat` the loop calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from attest.backends.types import Backend, ChatResponse, Message
from attest.errors import AttestError
from evals.store.keys import Entry, Identity, request_key, request_seed, this_worker
from evals.store.protocols import Answers, BatchClaims

__all__ = [
    "CacheOnlyChat",
    "CachedChat",
    "MemoryCache",
    "MissingSampleError",
    "SampleChat",
    "unsampled",
]


class SampleChat(Protocol):
    """A chat call that also knows which sample of a repeated request it answers."""

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse: ...


class MissingSampleError(AttestError):
    """The score stage needed a sample that is not in the cache."""


class MemoryCache:
    """Answers in a dict: for in-process evaluation (`evaluate`) and tests."""

    where = "memory"

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.warnings: list[str] = []

    def keys(self) -> Iterator[str]:
        return iter(list(self.entries))

    def unlock(self) -> int:
        return 0

    def collect(self, keep: set[str], *, before: float, dry_run: bool = True) -> tuple[int, int]:
        gone = [k for k, e in self.entries.items() if k not in keep and e.created < before]
        size = sum(len(self.entries[k].text.encode("utf-8")) for k in gone)
        if not dry_run:
            for key in gone:
                del self.entries[key]
        return len(gone), size

    def close(self) -> None:
        pass

    def batch_claims(self) -> BatchClaims | None:
        return None

    def get(self, key: str) -> Entry | None:
        return self.entries.get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]:
        return {key: self.entries.get(key) for key in keys}

    def put(self, key: str, entry: Entry) -> None:
        self.entries[key] = entry

    @contextmanager
    def lease(self, key: str, *, wait: bool = True) -> Iterator[bool | None]:
        yield key not in self.entries


class CachedChat:
    """A SampleChat that answers from the cache and asks the model only on a miss.

    `ask` is what a miss calls: a backend (through `from_backend`) or any SampleChat,
    such as a test's fake; the sample index is passed on, so repeats can be sampled.
    """

    def __init__(self, ask: SampleChat, cache: Answers, identity: Identity, *, server: str = "") -> None:
        self.ask = ask
        self.cache = cache
        self.identity = identity
        self.calls = 0
        self.worker = this_worker()
        self.server = server  # the model server's URL without credentials, recorded with each answer

    @classmethod
    def from_backend(cls, backend: Backend, cache: Answers, identity: Identity | None = None) -> CachedChat:
        server = getattr(backend, "host", None) or getattr(backend, "base_url", None) or getattr(backend, "kind", "")
        return cls(_backend_ask(backend), cache, identity or Identity.of(backend), server=str(server))

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        return self.fetch(request_key(self.identity, messages, schema, sample), messages, schema, sample)[0]

    def fetch(
        self, key: str, messages: Sequence[Message], schema: Mapping[str, Any], sample: int = 0
    ) -> tuple[Entry, bool]:
        """The entry for `key` and whether it was a hit; a miss calls the model and stores the answer."""
        found = self.try_fetch(key, messages, schema, sample, wait=True)
        assert found is not None  # waiting never yields "held"
        return found

    def try_fetch(
        self, key: str, messages: Sequence[Message], schema: Mapping[str, Any], sample: int = 0, *, wait: bool
    ) -> tuple[Entry, bool] | None:
        """`fetch`, or with `wait=False` None at once when another live run holds the sample's lease."""
        entry = self.cache.get(key)
        if entry is not None:
            return entry, True
        with self.cache.lease(key, wait=wait) as mine:
            if mine is None:
                return None
            if not mine:
                found = self.cache.get(key)
                if found is not None:
                    return found, True
            return self.ask_and_store(key, messages, schema, sample), False

    def ask_and_store(self, key: str, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> Entry:
        """Ask the model for a sample this process holds the claim of, and store the answer."""
        stored = self.answer(messages, schema, sample)
        self.cache.put(key, stored)
        return stored

    def answer(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> Entry:
        """Ask the model, and the answer as the entry to store (with this worker and server), not stored yet."""
        self.calls += 1
        response = self.ask(messages, schema, sample)
        who = {"worker": self.worker, "server": self.server}
        return response if isinstance(response, Entry) else Entry.of(response, **who)


def _backend_ask(backend: Backend) -> SampleChat:
    """Each request is sent with `request_seed`: repeats of a case differ, and so do cases.

    Everything the seed is made of (the base seed in the options, the rendered request,
    the sample index) is in the key, so the seed each answer was drawn with is fixed by it.
    """

    def ask(messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        seed = request_seed(backend.options, messages, schema, sample)
        if seed is None:
            return backend.chat_json(messages, schema)
        return backend.chat_json(messages, schema, seed=seed)

    return ask


class CacheOnlyChat:
    """A SampleChat for the score stage: answers from the cache, raises on any miss."""

    def __init__(self, cache: Answers, identity: Identity) -> None:
        self.cache = cache
        self.identity = identity

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        key = request_key(self.identity, messages, schema, sample)
        entry = self.cache.get(key)
        if entry is None:
            raise MissingSampleError(f"sample {key[:12]} is not in the cache: run the generate stage first")
        return entry


def unsampled(chat_json: Callable[[Sequence[Message], Mapping[str, Any]], ChatResponse]) -> SampleChat:
    """Adapt a plain chat_json (a backend, a fake) to a SampleChat; the sample index is ignored."""

    def call(messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        return chat_json(messages, schema)

    return call
