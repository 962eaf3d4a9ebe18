"""The disk fills mid-run: one line, nothing stored is lost, and the rerun asks for exactly the missing samples.

Two ways to fill it: the cache's Disk (the `disk=` seam of ResponseCache) raising
OSError ENOSPC after N answers, the way a write to a full file system fails; and a
real SQLITE_FULL from sqlite itself, by capping the database's page count on the
connection the generate stage writes through. The generate stage runs through the
entry points' error boundary, so what a user would see is what is checked.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from attest.errors import run_reporting_errors
from evals.engine.chat import CachedChat
from evals.engine.pipeline import Planned, generate, plan
from evals.reaction_eval import TASK, load_cases
from evals.store.keys import Identity
from evals.store.local.cache import ResponseCache
from evals.store.local.cache_db import JSONDisk
from tests.fakes import RecordingChat
from tests.reliability.fakeserver import reaction_answer

IDENTITY = Identity("fake", "m", "d", {})
SAMPLES = 24


class _Fake:
    """A backend double: answers every reaction request from its text, and records it."""

    options: dict[str, object] = {}  # noqa: RUF012 - greedy: the pipeline sends no seed of its own

    def __init__(self) -> None:
        self.chat_json = RecordingChat(lambda messages, schema: reaction_answer({"messages": list(messages)}))


def _full_after(room: int) -> type[JSONDisk]:
    """A Disk that stores `room` answers, then fails every write as a full file system does."""
    stored = [0]

    class FullDisk(JSONDisk):
        def store(self, value: Any, read: bool, key: Any = None) -> Any:
            if isinstance(value, dict):  # an answer (a lease holds a token string)
                if stored[0] >= room:
                    raise OSError(errno.ENOSPC, "No space left on device")
                stored[0] += 1
            return super().store(value, read, key)

    return FullDisk


def _planned() -> list[Planned]:
    return plan(TASK, load_cases()[:SAMPLES], IDENTITY, 1)


def _generate(cache: ResponseCache, planned: Sequence[Planned], concurrency: int) -> tuple[int, RecordingChat]:
    fake = _Fake()
    chat = CachedChat.from_backend(fake, cache, IDENTITY)  # type: ignore[arg-type]
    code = run_reporting_errors("reaction eval", lambda: generate(TASK, planned, chat, concurrency=concurrency) and 0)
    return code, fake.chat_json


def _stored(cache_dir: Path, planned: Sequence[Planned]) -> set[str]:
    cache = ResponseCache(cache_dir)
    try:
        entries = cache.get_many([p.key for p in planned])
        for p in planned:
            entry = entries[p.key]
            assert entry is None or entry.text == reaction_answer({"messages": p.messages}), "a wrong entry"
        assert cache.warnings == []
        return {key for key, entry in entries.items() if entry is not None}
    finally:
        cache.close()


def _check_resume(cache_dir: Path, planned: Sequence[Planned], stored: set[str]) -> int:
    """The rerun, on a disk with room again, asks for exactly the missing samples; returns how many."""
    cache = ResponseCache(cache_dir)
    try:
        code, chat = _generate(cache, planned, concurrency=4)
    finally:
        cache.close()
    assert code == 0
    assert len(chat.history) == SAMPLES - len(stored), "the rerun asks for exactly the missing samples"
    assert _stored(cache_dir, planned) == {p.key for p in planned}
    return len(chat.history)


def test_enospc_from_the_write_path_is_one_line_and_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planned, cache_dir = _planned(), tmp_path / "cache"
    cache = ResponseCache(cache_dir, disk=_full_after(10))
    try:
        code, _ = _generate(cache, planned, concurrency=4)
    finally:
        cache.close()
    lines = capsys.readouterr().err.splitlines()
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"reaction eval: error: no space left to store an answer in {cache_dir} (")
    assert "No space left on device" in lines[0] and lines[0].endswith("will not be asked again"), lines[0]
    stored = _stored(cache_dir, planned)
    assert len(stored) == 10
    asked = _check_resume(cache_dir, planned, stored)
    print(f"\nreliability disk full (ENOSPC): stored {len(stored)} of {SAMPLES}, rerun asked {asked}, lost 0")


def test_a_real_sqlite_full_is_the_same_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planned, cache_dir = _planned(), tmp_path / "cache"
    cache = ResponseCache(cache_dir)
    try:
        pages = cache._db._sql("PRAGMA page_count").fetchone()[0]
        cache._db._sql(f"PRAGMA max_page_count = {pages + 2}")  # this connection: the one concurrency 1 uses
        code, _ = _generate(cache, planned, concurrency=1)
    finally:
        cache.close()
    lines = capsys.readouterr().err.splitlines()
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"reaction eval: error: no space left to store an answer in {cache_dir} (")
    assert "database or disk is full" in lines[0], lines[0]
    stored = _stored(cache_dir, planned)
    assert 0 < len(stored) < SAMPLES
    asked = _check_resume(cache_dir, planned, stored)
    print(f"\nreliability disk full (SQLITE_FULL): stored {len(stored)} of {SAMPLES}, rerun asked {asked}, lost 0")
