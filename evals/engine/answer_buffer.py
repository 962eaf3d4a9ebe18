"""Answers of claimed samples written to a team's store in batches: one statement per batch, not per answer.

Request threads `add` each answer as the model returns it. A thread of the buffer's own
writes what has gathered in one `put_many` statement (its own transaction) once `size`
answers wait or the oldest has waited `after_s` seconds; `close` writes the rest, and the
run leaves its job only after that. A sample's claim is settled, and the sample counted,
once its answer is written, so other workers keep skipping it until then. A statement that
meets a lost connection is sent again on the new one (evals.store.postgres.connection.Link),
the whole batch with it; a batch that could not be written stays in the buffer and the
error is raised to the next `add` and by `close`. A crash loses at most the answers waiting
here (at most `size`, or `after_s` seconds' worth): the answers in flight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from evals.store.keys import Entry
from evals.store.protocols import BatchClaims

__all__ = ["FLUSH_AFTER_S", "FLUSH_EVERY", "AnswerBuffer"]

FLUSH_EVERY, FLUSH_AFTER_S = 32, 0.2


class AnswerBuffer:
    """Answers waiting to be written to `store`; `settled(key, False)` once each is written."""

    def __init__(
        self,
        store: BatchClaims,
        settled: Callable[[str, bool], None],
        *,
        size: int = FLUSH_EVERY,
        after_s: float = FLUSH_AFTER_S,
    ) -> None:
        self._store, self._settled, self._size, self._after_s = store, settled, max(1, size), after_s
        self._cond = threading.Condition()
        self._items: list[tuple[str, Entry]] = []
        self._oldest = 0.0
        self._closing = False
        self._error: BaseException | None = None
        self._writing = threading.Lock()  # one batch at a time, in the order they were taken
        self._thread = threading.Thread(target=self._loop, daemon=True, name="answer writer")
        self._thread.start()

    def add(self, key: str, entry: Entry) -> None:
        """Hold `key`'s answer for the next batch (raises the error a batch met, if one did)."""
        with self._cond:
            if self._error is not None:
                raise self._error
            if not self._items:
                self._oldest = time.monotonic()
            self._items.append((key, entry))
            if len(self._items) in (1, self._size):  # the writer's clock starts, or the batch is full
                self._cond.notify()

    def close(self) -> None:
        """Write every answer still waiting (the caller's connection), stop the writer thread."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self._error is not None:
            raise self._error
        self.flush()

    def flush(self) -> None:
        """Write what waits now in one statement; a batch that fails goes back to the front."""
        with self._writing:
            with self._cond:
                items, self._items = self._items, []
            if not items:
                return
            try:
                self._store.put_many(items)
            except BaseException:
                with self._cond:
                    self._items[:0] = items
                raise
        for key, _ in items:
            self._store.settle(key, stored=True)
            self._settled(key, False)

    def _loop(self) -> None:
        while self._wait_due():
            try:
                self.flush()
            except BaseException as exc:  # raised to the request threads and by close
                with self._cond:
                    self._error = exc
                return

    def _wait_due(self) -> bool:
        """Wait until a batch is due (full, or its oldest answer `after_s` old); False when closing."""
        with self._cond:
            while not self._closing:
                if len(self._items) >= self._size:
                    return True
                if self._items:
                    left = self._oldest + self._after_s - time.monotonic()
                    if left <= 0:
                        return True
                    self._cond.wait(left)
                else:
                    self._cond.wait()
            return False
