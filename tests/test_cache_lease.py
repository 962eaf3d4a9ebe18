"""Per-key leases: a dead or recycled holder's lease is broken; a live holder's is respected."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from evals.cache import Entry, ResponseCache, _lease_token

KEY = "a" * 64
LOCK = "lock:" + KEY


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_dead_holders_lease_is_broken(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache._db.set(LOCK, _lease_token(_dead_pid()))
    start = time.monotonic()
    with cache.lease(KEY, wait_s=5.0) as mine:
        assert mine
    assert time.monotonic() - start < 4.0, "broken at once, not after waiting out the lease"
    cache.close()


def test_a_recycled_pid_does_not_hold_a_lease(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    host, pid, _ = _lease_token(os.getpid()).split(":")
    cache._db.set(LOCK, f"{host}:{pid}:1")  # this pid, but a process that started at another time
    start = time.monotonic()
    with cache.lease(KEY, wait_s=5.0) as mine:
        assert mine
    assert time.monotonic() - start < 4.0
    cache.close()


def test_a_live_holders_lease_is_waited_for_and_its_answer_used(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache._db.set(LOCK, _lease_token(os.getpid()))  # held by a live process: this one
    entry = Entry("answer", 0.1, 1, 1, "m", "d", 1.0)

    def finish() -> None:
        time.sleep(0.3)
        cache.put(KEY, entry)

    threading.Thread(target=finish).start()
    with cache.lease(KEY, wait_s=5.0) as mine:
        assert not mine
    assert cache.get(KEY) == entry
    cache.close()
