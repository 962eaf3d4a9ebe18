"""Figure 2, cache-hit overhead: one `CachedChat` call on a warm key, against a bare function.

`CachedChat.__call__` on a key already in the cache does what every cached sample
costs: the request key (sha256 of the canonical request), the diskcache lookup,
the JSON decode and the `ChatResponse`. The reference is a bare in-memory function
with the same signature returning the same response. Each repeat times a batch of
calls of each, alternating which goes first; the figure is the median per-call
cost of a hit minus the bare call's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from attest.backends.stub import StubBackend
from attest.backends.types import ChatResponse, Message
from benchmarks._common import REPEATS, Row, Spread, print_rows, rotated, script_command, workdir
from evals import reaction_eval
from evals.engine.chat import CachedChat, SampleChat
from evals.store.local.cache import ResponseCache

BATCH = 2000
TARGET_MS = 0.3


def _per_call(chat: SampleChat, messages: list[Message], schema: Mapping[str, Any]) -> float:
    start = time.perf_counter()
    for _ in range(BATCH):
        chat(messages, schema, 0)
    return (time.perf_counter() - start) / BATCH


def _bare(response: ChatResponse) -> SampleChat:
    def call(messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        return response

    return call


def run() -> list[Row]:
    cache = ResponseCache(workdir("cache-hit"))
    try:
        chat = CachedChat.from_backend(StubBackend(answer=reaction_eval.TASK.stub_answer), cache)
        case = reaction_eval.load_cases()[0]
        messages, schema = reaction_eval.render(case), reaction_eval.TASK.schema
        bare = _bare(chat(messages, schema, 0))  # the miss that makes the key warm
        calls_before = chat.calls
        hit: list[float] = []
        ref: list[float] = []
        for i in range(REPEATS):
            for which in rotated(("hit", "bare"), i):
                (hit if which == "hit" else ref).append(_per_call(chat if which == "hit" else bare, messages, schema))
        assert chat.calls == calls_before, "a warm key reached the backend"
        over = Spread.of(h - r for h, r in zip(hit, ref, strict=True))
        times = Spread.of(h / r for h, r in zip(hit, ref, strict=True))
        return [
            Row(
                "2. cache-hit overhead",
                Spread.of(hit).fmt(1000, "ms per hit"),
                "bare function: " + Spread.of(ref).fmt(1e6, "us per call"),
                f"overhead {over.fmt(1000, 'ms')}; hit/bare {times.fmt()}",
                f"< {TARGET_MS} ms per hit",
                over.median * 1000 < TARGET_MS,
                script_command("fig2_cache_hit.py"),
                [f"{BATCH} calls per batch, one reaction request (2 messages, the Reaction schema), stub backend"],
            )
        ]
    finally:
        cache.close()


if __name__ == "__main__":
    print_rows(run())
