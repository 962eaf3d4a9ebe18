"""Run a function over items with at most N calls in flight, and stop at once on Ctrl-C.

`run_bounded(fn, items, concurrency)` is the generate stage's loop over the samples it
must ask the model for. The first exception stops submission; the calls already in
flight finish (their answers are stored) and the exception is re-raised. The first
KeyboardInterrupt stops submission too, but waits for the calls in flight only for a
short grace: they run in daemon threads, so they may still finish (and store their
answer) while the process winds down, or be dropped when it exits; an answer is
stored in one transaction or not at all, never in part.

Workers are daemon threads, not a `ThreadPoolExecutor`: the executor's shutdown, and
the interpreter's exit, wait for every submitted call, which is what made Ctrl-C
take minutes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

__all__ = ["DEFAULT_GRACE_S", "run_bounded"]

T = TypeVar("T")

DEFAULT_GRACE_S = 0.5  # how long Ctrl-C waits for the calls in flight before re-raising
_POLL_S = 0.1  # how often the main thread wakes up while it waits (it is where SIGINT lands)


def run_bounded(
    fn: Callable[[T], object], items: Iterable[T], concurrency: int, *, grace_s: float = DEFAULT_GRACE_S
) -> None:
    """Call `fn` on every item, at most `concurrency` at a time; see the module's docstring for stops."""
    if concurrency <= 1:
        for item in items:
            fn(item)
        return
    pool = _Pool(fn, iter(items))
    threads = [threading.Thread(target=pool.work, name=f"run_bounded-{n}", daemon=True) for n in range(concurrency)]
    for thread in threads:
        thread.start()
    try:
        _join(threads, deadline=None)
    except KeyboardInterrupt:
        pool.stop.set()
        _join(threads, deadline=time.monotonic() + grace_s)
        raise
    if pool.errors:
        raise pool.errors[0]


class _Pool(Generic[T]):
    """The shared state of the workers: the items left, the stop flag, the first error."""

    def __init__(self, fn: Callable[[T], object], items: Iterator[T]) -> None:
        self.fn = fn
        self.items = items
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

    def work(self) -> None:
        """Take the next item and call `fn` on it, until the items run out or someone stops."""
        while True:
            with self.lock:
                if self.stop.is_set():
                    return
                try:
                    item = next(self.items)
                except StopIteration:
                    return
            try:
                self.fn(item)
            except BaseException as exc:  # re-raised in the calling thread: nothing is swallowed
                with self.lock:
                    self.errors.append(exc)
                self.stop.set()
                return


def _join(threads: list[threading.Thread], deadline: float | None) -> None:
    """Wait for the threads, waking often so that a signal reaches the main thread; give up at `deadline`."""
    for thread in threads:
        while thread.is_alive():
            if deadline is not None and time.monotonic() >= deadline:
                return
            thread.join(_POLL_S)
