"""The answer buffer's timing and failures, over a store double that records each batch it is sent."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from evals.engine.answer_buffer import AnswerBuffer
from evals.store.keys import Entry
from evals.store.postgres.connection import StoreError

ENTRY = Entry("{}", 0.1, 1, 1, "m", "d", created=1.0, worker="w", server="s")


class _Store:
    """Records each `put_many` batch and each settled key; fails the next `fail` batches."""

    lease_wait_s, where = 1.0, "the double"

    def __init__(self, fail: int = 0) -> None:
        self.batches: list[list[str]] = []
        self.settled: list[str] = []
        self.fail = fail
        self.sent = threading.Event()

    def claim_many(self, keys: Sequence[str], limit: int) -> tuple[list[str], set[str]]:
        raise AssertionError("not used")

    def settle(self, key: str, *, stored: bool) -> None:
        assert stored
        self.settled.append(key)

    def put_many(self, items: Sequence[tuple[str, Entry]]) -> int:
        if self.fail:
            self.fail -= 1
            raise StoreError("the store went away")
        self.batches.append([key for key, _ in items])
        self.sent.set()
        return len(items)


def test_a_lone_answer_is_written_after_the_wait_without_waiting_for_a_full_batch() -> None:
    store, counted = _Store(), []
    buffer = AnswerBuffer(store, lambda key, hit: counted.append(key), size=32, after_s=0.05)
    start = time.monotonic()
    buffer.add("k1", ENTRY)
    assert store.sent.wait(5), "a lone answer was never written"
    assert time.monotonic() - start >= 0.05 and store.batches == [["k1"]]
    assert store.settled == counted == ["k1"]  # settled and counted once written, not before
    buffer.close()
    assert store.batches == [["k1"]]


def test_a_full_batch_is_one_statement_and_close_writes_the_rest() -> None:
    store = _Store()
    buffer = AnswerBuffer(store, lambda key, hit: None, size=3, after_s=60)
    for n in range(7):
        buffer.add(f"k{n}", ENTRY)
    buffer.close()
    assert [k for batch in store.batches for k in batch] == [f"k{n}" for n in range(7)]
    assert len(store.batches) <= 3 and all(len(b) <= 7 for b in store.batches)
    assert store.settled == [f"k{n}" for n in range(7)]


def test_a_batch_that_fails_stays_and_its_error_reaches_the_next_add_and_close() -> None:
    store = _Store(fail=1)
    buffer = AnswerBuffer(store, lambda key, hit: None, size=2, after_s=60)
    buffer.add("k1", ENTRY)
    buffer.add("k2", ENTRY)  # full: the writer sends it, and it fails
    deadline = time.monotonic() + 5
    with pytest.raises(StoreError, match="went away"):
        while time.monotonic() < deadline:
            buffer.add("k3", ENTRY)
            time.sleep(0.01)
    with pytest.raises(StoreError, match="went away"):
        buffer.close()
    assert store.settled == []  # nothing counted as stored that was not
    buffer.flush()  # the failed batch was kept: sent again once the store answers
    assert store.batches[0][:2] == ["k1", "k2"] and store.settled[:2] == ["k1", "k2"]
