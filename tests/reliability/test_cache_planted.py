"""A hostile cache database: planted rows and settings never touch a file outside the cache.

A shared cache is a stated use, so whoever can write `responses/cache.db` must not be
able to make the next run delete, read or write any other file, nor weaken its crash
safety. After a good run the tests plant, with sqlite3 directly, what diskcache would
act on: rows past their expiry whose `filename` is absolute or climbs out with `..`
(diskcache deletes such a file, and the empty directories above it, when it culls),
a planned sample's row pointing at an outside file (read on a lookup, deleted on the
overwrite), and Settings rows asking for `synchronous=0`, no journal, eviction by size
with a zero limit and every value in a file. The rerun must exit 0 with a warning,
leave every outside file as it was, store no value file, and run with attest's settings.
"""

from __future__ import annotations

import gc
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from evals.store.local.cache import ResponseCache
from tests.reliability.fakeserver import FakeServer
from tests.reliability.helpers import corpus_cases, run_reaction

pytestmark = pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning")

_CASES = corpus_cases(slice(4))
_PLANTED_SETTINGS = {
    "sqlite_synchronous": 0,
    "sqlite_journal_mode": "off",
    "eviction_policy": "least-recently-stored",
    "size_limit": 0,
    "cull_limit": 100,
    "disk_min_file_size": 0,
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeServer, Path, Path]]:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(_CASES), encoding="utf-8")
    with FakeServer() as server:
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", server.url)
        yield server, corpus, tmp_path / "cache"
    gc.collect()


def _run(cache_dir: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    return run_reaction(cache_dir, corpus, capsys, "--retries", "1", "--timeout", "5", "--concurrency", "1")


def _sql(cache_dir: Path, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(cache_dir / "responses" / "cache.db")) as db:
        rows = db.execute(statement, params).fetchall()
        db.commit()
        return rows


def _plant_row(cache_dir: Path, key: str, filename: str) -> None:
    """A row, expired an hour ago, whose value diskcache would look for (and delete) at `filename`."""
    past = time.time() - 3600
    _sql(
        cache_dir,
        "INSERT INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode,"
        " filename, value) VALUES (?, 1, ?, ?, ?, 0, NULL, 10, 2, ?, NULL)",
        (key, past, past, past, filename),
    )


def _victims(tmp_path: Path) -> dict[Path, str]:
    """Files outside the cache, each alone in its directories (diskcache prunes empty directories too)."""
    paths = [tmp_path / "outside" / "deep" / name for name in ("absolute.txt", "dotdot.txt", "planned.txt")]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"precious: {path.name}\n", encoding="utf-8")
    return {path: path.read_text(encoding="utf-8") for path in paths}


def test_planted_rows_and_settings_touch_nothing_outside_the_cache(
    env: tuple[FakeServer, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, corpus, cache_dir = env
    assert _run(cache_dir, corpus, capsys) == (0, [])
    victims = _victims(tmp_path)
    absolute, _, planned = victims
    (manifest,) = (cache_dir / "runs").glob("*/manifest.json")
    keys = [s["key"] for s in json.loads(manifest.read_text(encoding="utf-8"))["samples"]]
    _plant_row(cache_dir, "planted-absolute", str(absolute))
    _plant_row(cache_dir, "planted-dotdot", "../../outside/deep/dotdot.txt")
    _sql(cache_dir, "UPDATE Cache SET mode = 2, filename = ?, value = NULL WHERE key = ?", (str(planned), keys[0]))
    for name, value in _PLANTED_SETTINGS.items():
        _sql(cache_dir, "UPDATE Settings SET value = ? WHERE key = ?", (value, name))

    first = server.count
    code, lines = _run(cache_dir, corpus, capsys)
    assert code == 0, lines
    assert {path: path.read_text(encoding="utf-8") for path in victims if path.exists()} == victims
    assert server.count - first == 1, "only the sample whose row pointed outside is asked again"
    assert len(lines) == 1 and lines[0].startswith("warning: "), lines
    assert "3 entries" in lines[0] and "never reads, writes or deletes" in lines[0], lines[0]
    assert _files(cache_dir) == [], "a value was stored in a file"
    _assert_safe_settings(cache_dir)
    print(f"\nreliability planted rows: 3 rows + {len(_PLANTED_SETTINGS)} settings planted, outside files intact")


def _files(cache_dir: Path) -> list[str]:
    """Files under responses/ other than the sqlite database and its journal."""
    root = cache_dir / "responses"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "cache.db" not in p.name)


def _assert_safe_settings(cache_dir: Path) -> None:
    cache = ResponseCache(cache_dir)
    try:
        settings = dict(_sql(cache_dir, "SELECT key, value FROM Settings"))
        assert (settings["sqlite_synchronous"], settings["sqlite_journal_mode"]) == (1, "wal"), settings
        assert (settings["eviction_policy"], settings["cull_limit"]) == ("none", 0), settings
        # the connection the cache reads and writes through, not only what the table says
        assert cache._db._sql("PRAGMA synchronous").fetchone() == (1,)
        assert cache._db._sql("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        cache.close()
