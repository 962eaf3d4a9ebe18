"""Cache faults: damaged entries are misses with a warning and get regenerated; a pickle is never loaded.

The cache is diskcache: every value lives in `responses/cache.db` (table `Cache`,
column `value`), however big; attest never stores, reads or deletes a value file. The
tests damage a filled cache the way a disk, an editor or an attacker could, then rerun
the eval.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import random
import shlex
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from evals.store.local.cache import ResponseCache
from tests.reliability.fakeserver import FakeServer, reaction_answer
from tests.reliability.helpers import corpus_cases, run_reaction

# evals.cli.runner.main does not close its backend's HTTP client (a process exit does); run
# in-process here, its sockets are closed by the garbage collector after each test.
pytestmark = pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning")

_BIG = 40_000  # over diskcache's default 32 kB file threshold: still stored in the row
_TOTALS = {"tried": 0, "survived": 0}


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    yield
    print(f"\nreliability cache faults: tried {_TOTALS['tried']}, survived {_TOTALS['survived']}")


def _answer(body: dict[str, Any]) -> str:
    """Normal answers, except one case whose (invalid, over-long) reasoning diskcache would put in a file."""
    text = reaction_answer(body)
    if "Title: " + _BIG_TITLE in body["messages"][-1]["content"]:
        return json.dumps({"verdict": True, "confidence": 3, "reasoning": "x" * _BIG})
    return text


_CASES = corpus_cases(slice(6))
_BIG_TITLE = _CASES[-1]["title"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeServer, Path, Path]]:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(_CASES), encoding="utf-8")
    with FakeServer(_answer) as server:
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", server.url)
        yield server, corpus, tmp_path / "cache"
    gc.collect()


def _run(cache_dir: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    return run_reaction(cache_dir, corpus, capsys, "--retries", "1", "--timeout", "5")


def _keys(cache_dir: Path) -> list[str]:
    """The sample keys of the first run, in corpus order."""
    manifest = min((cache_dir / "runs").glob("*/manifest.json"))
    return [s["key"] for s in json.loads(manifest.read_text(encoding="utf-8"))["samples"]]


def _sql(cache_dir: Path, statement: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(cache_dir / "responses" / "cache.db")) as db:
        rows = db.execute(statement, params).fetchall()
        db.commit()
        return rows


def _set_value(value: bytes) -> Callable[[Path, str], None]:
    def damage(cache_dir: Path, key: str) -> None:
        _sql(cache_dir, "UPDATE Cache SET value = ? WHERE key = ?", (value, key))

    return damage


def _truncate_value(cache_dir: Path, key: str) -> None:
    ((value,),) = _sql(cache_dir, "SELECT value FROM Cache WHERE key = ?", (key,))
    _sql(cache_dir, "UPDATE Cache SET value = ? WHERE key = ?", (bytes(value)[: len(value) // 2], key))


def _truncate_big_value(cache_dir: Path, key: str) -> None:
    ((filename, size),) = _sql(cache_dir, "SELECT filename, length(value) FROM Cache WHERE key = ?", (key,))
    assert filename is None and size > _BIG, "the big answer should be stored in the row, not in a file"
    _truncate_value(cache_dir, key)


def _wrong_types() -> bytes:
    entry = {"text": 7, "latency_s": "fast", "prompt_tokens": None, "completion_tokens": None, "model": []}
    return json.dumps({**entry, "digest": "", "created": 0}).encode("utf-8")


# sample index -> (what is done to it, what the warning says)
DAMAGE: dict[str, tuple[int, Callable[[Path, str], None], str]] = {
    "garbage-bytes": (0, _set_value(b"\x80\x93\xff\x00garbage"), "can't decode byte"),
    "truncated-row": (1, _truncate_value, "Unterminated string"),
    "wrong-shape": (2, _set_value(b'["not", "an", "entry"]'), "unexpected shape"),
    "wrong-types": (3, _set_value(_wrong_types()), "unexpected shape"),
    "not-json-text": (4, _set_value(b"{'text': 'python repr'}"), "Expecting property name"),
    "truncated-big-row": (5, _truncate_big_value, "Unterminated string"),
}


def test_damaged_entries_are_misses_with_a_warning_and_regenerated(
    env: tuple[FakeServer, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, corpus, cache_dir = env
    assert _run(cache_dir, corpus, capsys) == (0, [])
    keys = _keys(cache_dir)
    good = _entries(cache_dir, keys)
    for sample, damage, _ in DAMAGE.values():
        damage(cache_dir, keys[sample])

    first = server.count
    code, lines = _run(cache_dir, corpus, capsys)
    _TOTALS["tried"] += len(DAMAGE)
    assert code == 0, lines
    assert server.count - first == len(DAMAGE), "each damaged entry is regenerated, once"
    assert len(lines) == len(DAMAGE), lines
    for (sample, _, why), line in zip(DAMAGE.values(), lines, strict=True):
        assert line.startswith(f"warning: cache entry {keys[sample][:12]} is unreadable (") and why in line, line
        assert "treating it as missing and regenerating" in line
    assert _entries(cache_dir, keys) == good
    _TOTALS["survived"] += len(DAMAGE)


def _entries(cache_dir: Path, keys: list[str]) -> list[str]:
    cache = ResponseCache(cache_dir)
    try:
        texts = [entry.text for entry in map(cache.get, keys) if entry is not None]
        assert cache.warnings == [] and len(texts) == len(keys)
        return texts
    finally:
        cache.close()


class _Exploit:
    """Unpickling this runs a shell command that creates `marker`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[[str], int], tuple[str]]:
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


def _plant_row(cache_dir: Path, key: str, payload: bytes) -> None:
    """Make `key`'s row a pickle (mode 4 = diskcache's MODE_PICKLE), replacing or inserting it."""
    now = time.time()
    _sql(cache_dir, "DELETE FROM Cache WHERE key = ?", (key,))
    _sql(
        cache_dir,
        "INSERT INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode,"
        " filename, value) VALUES (?, 1, ?, NULL, ?, 0, NULL, 0, 4, NULL, ?)",
        (key, now, now, payload),
    )


def _plant_file(cache_dir: Path, key: str, payload: bytes) -> None:
    """The same, with the pickle in a value file the row points at (how diskcache stores big pickles)."""
    (cache_dir / "responses" / "planted.val").write_bytes(payload)
    _plant_row(cache_dir, key, b"")
    _sql(cache_dir, "UPDATE Cache SET filename = 'planted.val', value = NULL WHERE key = ?", (key,))


def test_a_planted_pickle_is_never_unpickled(
    env: tuple[FakeServer, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, corpus, cache_dir = env
    control = tmp_path / "control-marker"
    pickle.loads(pickle.dumps(_Exploit(control)))  # proves the payload is live
    assert control.exists(), "the payload should run its command when unpickled"

    assert _run(cache_dir, corpus, capsys) == (0, [])
    keys = _keys(cache_dir)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Exploit(marker))
    _plant_row(cache_dir, keys[0], payload)
    _plant_file(cache_dir, keys[1], payload)

    cache = ResponseCache(cache_dir)
    try:
        assert cache.get(keys[0]) is None and cache.get(keys[1]) is None
        dropped, refused = cache.warnings
        assert "1 entry in" in dropped and "named a file ('planted.val')" in dropped, dropped
        assert refused.startswith(f"cache entry {keys[0][:12]} is unreadable (cache value has mode 4;"), refused
    finally:
        cache.close()
    _plant_row(cache_dir, keys[0], payload)  # both again: the look above dropped or skipped them
    _plant_file(cache_dir, keys[1], payload)
    first = server.count
    code, lines = _run(cache_dir, corpus, capsys)
    _TOTALS["tried"] += 2
    assert code == 0
    assert len(lines) == 2, lines
    assert lines[0].startswith("warning: 1 entry in") and "never reads, writes or deletes such files" in lines[0]
    assert "mode 4; only JSON bytes are accepted (never unpickled)" in lines[1], lines
    assert (cache_dir / "responses" / "planted.val").read_bytes() == payload, "the planted file is left alone"
    assert server.count - first == 2
    assert not marker.exists(), "a planted pickle was unpickled"
    _TOTALS["survived"] += 2


@pytest.mark.parametrize("where", ["under-a-file", "is-a-file"])
def test_a_cache_path_that_cannot_be_created_is_one_clear_line(
    where: str, env: tuple[FakeServer, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, corpus, _ = env
    blocker = tmp_path / "blocker"
    blocker.write_text("a regular file\n", encoding="utf-8")
    cache_dir = blocker / "cache" if where == "under-a-file" else blocker
    code, lines = _run(cache_dir, corpus, capsys)
    _TOTALS["tried"] += 1
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"reaction eval: error: --cache-dir/ATTEST_CACHE_DIR {cache_dir} ")
    assert lines[0].endswith("give a directory (made if missing), e.g. --cache-dir cache")
    assert server.count == 0
    _TOTALS["survived"] += 1


def test_a_read_only_cache_directory_is_one_clear_line(
    env: tuple[FakeServer, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root, whom a 0o500 directory does not stop from writing")
    server, corpus, _ = env
    cache_dir = tmp_path / "read-only"
    cache_dir.mkdir(mode=0o500)
    try:
        code, lines = _run(cache_dir, corpus, capsys)
    finally:
        cache_dir.chmod(0o700)
    _TOTALS["tried"] += 1
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"reaction eval: error: cannot open the cache in {cache_dir} (")
    assert "Permission denied" in lines[0] and lines[0].endswith("--cache-dir or ATTEST_CACHE_DIR")
    assert server.count == 0
    _TOTALS["survived"] += 1


def test_a_missing_cache_directory_is_created(
    env: tuple[FakeServer, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, corpus, _ = env
    cache_dir = tmp_path / "not" / "yet" / "there"
    assert _run(cache_dir, corpus, capsys) == (0, [])
    assert len(_keys(cache_dir)) == len(_CASES)


def test_a_pickle_planted_in_a_lease_row_is_broken_with_a_warning(
    env: tuple[FakeServer, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lease row holding a pickle: never unpickled, never waited on; removed with one warning."""
    server, corpus, cache_dir = env
    assert _run(cache_dir, corpus, capsys) == (0, [])
    keys = _keys(cache_dir)
    marker = tmp_path / "pwned"
    _sql(cache_dir, "DELETE FROM Cache WHERE key = ?", (keys[0],))  # a miss, so the rerun takes its lease
    _plant_row(cache_dir, "lock:" + keys[0], pickle.dumps(_Exploit(marker)))

    first = server.count
    code, lines = _run(cache_dir, corpus, capsys)
    _TOTALS["tried"] += 1
    assert code == 0, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"warning: the lease on sample {keys[0][:12]} is unreadable (cache value has mode 4")
    assert lines[0].endswith("removed it"), lines[0]
    assert server.count - first == 1
    assert not marker.exists(), "a planted pickle was unpickled"
    assert _sql(cache_dir, "SELECT count(*) FROM Cache WHERE key LIKE 'lock:%'", ()) == [(0,)]
    _TOTALS["survived"] += 1


def _damage_the_middle(db: Path, length: int = 8192) -> None:
    """Overwrite `length` bytes in the middle of the file with seeded noise, as a bad disk sector would."""
    data = bytearray(db.read_bytes())
    middle = len(data) // 2
    data[middle : middle + length] = random.Random(13).randbytes(length)
    db.write_bytes(bytes(data))


def test_a_corrupted_database_page_is_one_line_saying_how_to_repair(
    env: tuple[FakeServer, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, corpus, cache_dir = env
    assert _run(cache_dir, corpus, capsys) == (0, [])
    responses = cache_dir / "responses"
    _damage_the_middle(responses / "cache.db")

    first = server.count
    code, lines = _run(cache_dir, corpus, capsys)
    _TOTALS["tried"] += 1
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"reaction eval: error: the cache database {responses / 'cache.db'} is damaged (")
    assert f"move it aside (mv {responses} {responses}.damaged) and rerun" in lines[0], lines[0]
    assert server.count == first

    responses.rename(responses.with_name("responses.damaged"))  # what the line says to do
    assert _run(cache_dir, corpus, capsys) == (0, [])
    assert server.count - first == len(_CASES)
    _TOTALS["survived"] += 1
