"""The private diskcache use evals/store/local/cache.py keeps, under the version pinned in pyproject.toml.

`ResponseCache.get_many`, the open-time audit and `unlock` query diskcache's `Cache`
table through `Cache._sql` (private): one query per 500 keys instead of one `get`
per key, twice as fast for the score stage's 10,000 reads. diskcache is pinned to the
version these tests ran against; raising the pin means rerunning them.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import diskcache

from evals.store.keys import Entry
from evals.store.local.cache import ResponseCache

ROOT = Path(__file__).resolve().parents[2]
ENTRY = Entry("answer", 0.1, 1, None, "m", "d", 1.0)


def test_diskcache_is_pinned_to_the_version_installed() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (pin,) = [d for d in project["dependencies"] if d.startswith("diskcache")]  # the harness installs with the app
    assert re.fullmatch(r"diskcache==[0-9.]+", pin), f"{pin}: evals/store/local/cache.py relies on diskcache internals"
    assert pin == f"diskcache=={diskcache.__version__}"


def test_the_table_layout_get_many_reads(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    try:
        columns = [row[1] for row in cache._db._sql("PRAGMA table_info(Cache)").fetchall()]
        assert {"key", "raw", "mode", "filename", "value", "expire_time"} <= set(columns), columns
    finally:
        cache.close()


def test_get_many_reads_past_one_query_and_agrees_with_get(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    try:
        keys = [f"{i:064x}" for i in range(1203)]  # three queries of at most 500 keys
        for key in keys[::2]:
            cache.put(key, ENTRY)
        got = cache.get_many(keys)
        assert got == {key: cache.get(key) for key in keys}
        assert sum(entry is not None for entry in got.values()) == 602
    finally:
        cache.close()


def test_unlock_drops_leases_and_nothing_else(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    try:
        cache.put("k" * 64, ENTRY)
        cache._db.set("lock:" + "k" * 64, "0" * 32)
        cache._db.set("lock:" + "j" * 64, "1" * 32)
        assert cache.unlock() == 2
        assert cache.get("k" * 64) == ENTRY and cache._db.get("lock:" + "k" * 64) is None
    finally:
        cache.close()


def test_the_unlock_command_drops_the_leases_a_lease_message_names(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    try:
        cache.put("k" * 64, ENTRY)
        cache._db.set("lock:" + "k" * 64, "0" * 32)
    finally:
        cache.close()
    done = subprocess.run(
        [sys.executable, "-m", "evals.unlock", "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"dropped 1 lease(s) in {tmp_path}"), done.stderr
    cache = ResponseCache(tmp_path)
    try:
        assert cache._db.get("lock:" + "k" * 64) is None and cache.get("k" * 64) == ENTRY
    finally:
        cache.close()
