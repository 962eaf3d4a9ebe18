"""The cache's defences against its own database, one layer at a time.

tests/reliability/test_cache_planted.py plants rows and settings before a run and
checks the whole; these check each layer alone, so that removing any one of them
fails a test: the Disk never writes or deletes a file, diskcache never culls, the
Settings table cannot change a setting (not at open, not on a later connection), and
rows naming a file are dropped at open.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import diskcache
import pytest

from evals.store.keys import Entry
from evals.store.local.cache import ResponseCache
from evals.store.local.cache_db import JSONDisk

ENTRY = Entry("answer", 0.1, 1, 2, "m", "d", 1.0)


def _sql(directory: Path, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(directory / "responses" / "cache.db")) as db:
        rows = db.execute(statement, params).fetchall()
        db.commit()
        return rows


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("precious\n", encoding="utf-8")
    return victim


def test_the_disk_never_deletes_a_file(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    inside = tmp_path / "ab" / "cd" / "0123.val"
    inside.parent.mkdir(parents=True)
    inside.write_bytes(b"{}")
    disk = JSONDisk(str(tmp_path))
    for name in (str(victim), "../outside/victim.txt", "ab/cd/0123.val"):
        disk.remove(name)
    assert victim.exists() and inside.exists()


def test_the_disk_keeps_a_big_value_in_the_row(tmp_path: Path) -> None:
    _, mode, filename, value = JSONDisk(str(tmp_path), min_file_size=0).store({"text": "x" * 2_000_000}, False)
    assert (mode, filename) == (diskcache.core.MODE_RAW, None) and len(value) > 2_000_000
    assert list(tmp_path.iterdir()) == []


def test_a_row_planted_during_a_run_is_not_culled_and_its_file_not_touched(tmp_path: Path) -> None:
    """Rows are only dropped at open; one planted later must meet a cache that neither culls nor deletes."""
    victim = _victim(tmp_path)
    cache = ResponseCache(tmp_path / "cache")
    try:
        past = time.time() - 3600
        for key, filename in (("planted", str(victim)), ("k" * 64, str(victim))):
            _sql(
                tmp_path / "cache",
                "INSERT INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode,"
                " filename, value) VALUES (?, 1, ?, ?, ?, 0, NULL, 9, 2, ?, NULL)",
                (key, past, past, past, filename),
            )
        cache.put("k" * 64, ENTRY)  # an overwrite of a row naming a file, and a write that would cull
        assert cache.get("k" * 64) == ENTRY
    finally:
        cache.close()
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert _sql(tmp_path / "cache", "SELECT count(*) FROM Cache WHERE key = 'planted'") == [(1,)], "culled"


def test_rows_naming_a_file_are_dropped_at_open_with_one_warning(tmp_path: Path) -> None:
    ResponseCache(tmp_path).close()
    for n in range(3):
        _sql(
            tmp_path,
            "INSERT INTO Cache (key, raw, store_time, access_time, size, mode, filename) VALUES (?, 1, 0, 0, 0, 2, ?)",
            (f"row-{n}", f"/etc/\x1b[31mred-{n}"),
        )
    cache = ResponseCache(tmp_path)
    cache.close()
    (warning,) = cache.warnings
    assert warning.startswith("3 entries in") and "'/etc/\\x1b[31mred-0'" in warning, warning  # escaped, not raw
    assert _sql(tmp_path, "SELECT count(*) FROM Cache WHERE filename IS NOT NULL") == [(0,)]


def _pragma_in_a_new_thread(cache: ResponseCache, pragma: str) -> Any:
    """diskcache opens one connection per thread and reapplies the Settings table's pragmas to it."""
    found: list[Any] = []
    thread = threading.Thread(target=lambda: found.append(cache._db._sql(f"PRAGMA {pragma}").fetchone()[0]))
    thread.start()
    thread.join(30)
    return found[0]


def test_settings_planted_while_a_cache_is_open_are_not_applied(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    try:
        _sql(tmp_path, "UPDATE Settings SET value = 0 WHERE key = 'sqlite_synchronous'")
        _sql(tmp_path, "UPDATE Settings SET value = 'memory' WHERE key = 'sqlite_journal_mode'")
        assert _pragma_in_a_new_thread(cache, "synchronous") == 1
        assert _pragma_in_a_new_thread(cache, "journal_mode") == "wal"
    finally:
        cache.close()


@pytest.mark.parametrize(
    ("key", "value"),
    [("_directory", "/"), ("disk__directory", "/"), ("disk_unknown", 1), ("sqlite_journal_mode", "wal; x")],
)
def test_an_unknown_or_hostile_setting_is_never_applied(tmp_path: Path, key: str, value: Any) -> None:
    ResponseCache(tmp_path).close()
    _sql(tmp_path, "INSERT OR REPLACE INTO Settings VALUES (?, ?)", (key, value))
    cache = ResponseCache(tmp_path)
    try:
        assert cache._db.directory == str(tmp_path / "responses")
        assert cache._db.disk._directory == str(tmp_path / "responses")
        cache.put("k" * 64, ENTRY)
        assert cache.get("k" * 64) == ENTRY
    finally:
        cache.close()


def test_a_pickled_key_is_never_unpickled(tmp_path: Path) -> None:
    disk = JSONDisk(str(tmp_path))
    with pytest.raises(ValueError, match="never unpickled"):
        disk.get(b"\x80\x04K\x01.", False)
    with pytest.raises(TypeError):
        disk.put(("a", "tuple"))
