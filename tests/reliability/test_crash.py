"""SIGKILL during generation: a crash loses no stored sample, and the rerun asks only for what is missing.

A real `run_reaction_eval.py --backend openai` runs in a subprocess against the fake
server (20 ms per answer, 4 requests in flight) and is killed with SIGKILL at 20
seeded random points: most a few requests into generation, some a random time after
the process starts (imports, cache open, manifest write). After each kill the cache
must open cleanly with every stored entry readable and equal to what the server
answered; nothing stored before may disappear; and no run may ask for a sample that
was already stored. A final run to completion must request exactly the missing samples.

What the figures mean:
- lost: samples stored in the cache at some point and missing later (must be 0);
- in flight: samples the server answered but the killed process never stored (at most
  the requests in flight at the kill; they are asked again, which is not an extra call);
- extra calls: requests for a sample already in the cache when the run started, or asked
  twice in one run (must be 0).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from attest.backends.settings import Settings
from evals.engine.pipeline import plan
from evals.reaction_eval import TASK, load_cases
from evals.store.keys import Identity
from evals.store.local.cache import ResponseCache
from tests.reliability.fakeserver import ROOT, FakeServer, Recorded, reaction_answer, reaction_command, script_env
from tests.reliability.helpers import PROGRESS

KILLS = 20
CONCURRENCY = 4  # the runner's default for the openai backend
SEED = 20240607


def _command(cache_dir: Path) -> list[str]:
    return reaction_command(cache_dir, "--retries", "1")


def _planned_keys() -> dict[str, str]:
    """messages (canonical JSON) -> request key, for every sample of the split-all reaction run."""
    identity = Identity("openai", "fake-model", "", Settings().options)
    planned = plan(TASK, load_cases(), identity, 1)
    return {json.dumps(p.messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False): p.key for p in planned}


def _answers(keys: dict[str, str]) -> dict[str, str]:
    """request key -> the text the fake server answers for it."""
    return {key: reaction_answer({"messages": json.loads(messages)}) for messages, key in keys.items()}


def _stored(cache_dir: Path, expected: dict[str, str]) -> set[str]:
    """Open the cache, read every planned key; each entry present must be readable and right."""
    cache = ResponseCache(cache_dir)
    try:
        present = set()
        for key, text in expected.items():
            entry = cache.get(key)
            if entry is not None:
                assert entry.text == text, f"cache entry {key[:12]} holds another request's answer"
                present.add(key)
        assert cache.warnings == [], cache.warnings
        return present
    finally:
        cache.close()


def _kill_at_random_point(proc: subprocess.Popen[bytes], server: FakeServer, first: int, rng: random.Random) -> None:
    """SIGKILL `proc` a few answers into generation, or (one time in five) a random time after it starts."""
    deadline = time.monotonic() + 30
    if rng.random() < 0.2:
        time.sleep(rng.uniform(0.05, 1.0))
    else:
        target = first + rng.randint(0, 4)
        while len(server.answered) <= target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.03))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def _keys_of(records: list[Recorded], keys: dict[str, str]) -> list[str]:
    return [keys[r.messages_key] for r in records if r.messages_key in keys]


def _extra_calls(requested: list[str], stored_at_start: set[str]) -> int:
    """Requests for samples already stored when the run began, plus repeats within the run."""
    return sum(k in stored_at_start for k in requested) + len(requested) - len(set(requested))


@dataclass
class _Tally:
    kills: int = 0
    early: int = 0
    lost: int = 0
    in_flight: int = 0
    extra: int = 0
    stored: set[str] = field(default_factory=set)


def _kill_once(server: FakeServer, cache_dir: Path, keys: dict[str, str], rng: random.Random, tally: _Tally) -> None:
    """One run killed at a random point, then the cache checked against what the server saw."""
    first, first_answer = server.count, len(server.answered)
    env = script_env(server.url)
    proc = subprocess.Popen(
        _command(cache_dir), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _kill_at_random_point(proc, server, first_answer, rng)
    tally.kills += proc.returncode == -signal.SIGKILL
    tally.early += server.count == first  # killed before its first request (imports, cache open, manifest)
    time.sleep(0.1)  # let the server finish answers to the dead process, so they count for this run
    now = _stored(cache_dir, _answers(keys))
    unstored = set(_keys_of(server.answered[first_answer:], keys)) - now
    assert len(unstored) <= CONCURRENCY, f"{len(unstored)} answered samples were not stored"
    tally.lost += len(tally.stored - now)
    tally.in_flight += len(unstored)
    tally.extra += _extra_calls(_keys_of(server.requests[first:], keys), tally.stored)
    tally.stored = now


@pytest.mark.slow
def test_sigkill_at_random_points_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    keys, cache_dir, tally = _planned_keys(), tmp_path / "cache", _Tally()
    started = time.monotonic()
    with FakeServer(delay=0.02) as server:
        for _ in range(KILLS):
            _kill_once(server, cache_dir, keys, rng, tally)
        first = server.count
        final = subprocess.run(
            _command(cache_dir), cwd=ROOT, env=script_env(server.url), capture_output=True, timeout=120
        )
        tally.extra += _extra_calls(_keys_of(server.requests[first:], keys), tally.stored)
        asked, done = server.count - first, _stored(cache_dir, _answers(keys))
    total, stored = len(keys), len(tally.stored)
    print(
        f"\nreliability crash: kills {tally.kills} ({tally.early} before the first request), samples {total}, "
        f"stored before the final run {stored}, samples lost {tally.lost}, answered in flight at a kill "
        f"{tally.in_flight}, extra model calls {tally.extra}, final run requests {asked} (missing {total - stored}), "
        f"{time.monotonic() - started:.1f} s"
    )
    assert final.returncode == 0, final.stderr.decode()
    assert (tally.kills, tally.lost, tally.extra) == (KILLS, 0, 0)
    assert asked == total - stored
    assert done == set(keys.values())
    assert 0 < stored < total, "the kills should leave a partly filled cache"


def _start_server(tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    """The fake server as its own process (the script mode): returns it, its URL and its answer log."""
    port_file, log = tmp_path / f"{name}.port", tmp_path / f"{name}.jsonl"
    script = str(ROOT / "tests" / "reliability" / "fakeserver.py")
    command = [sys.executable, script, "--port-file", str(port_file), "--delay", "0.05", "--log", str(log)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not port_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the fake server did not start"
        time.sleep(0.02)
    log.touch()
    return proc, f"http://127.0.0.1:{port_file.read_text(encoding='utf-8')}", log


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.slow
def test_server_killed_mid_run_then_restarted(tmp_path: Path) -> None:
    """The other side crashing: the run stops with one clear line, keeps what it had, and resumes."""
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(json.loads(TASK.corpus.read_text(encoding="utf-8"))[:12]), encoding="utf-8")
    cache_dir = tmp_path / "cache"
    command = reaction_command(cache_dir, "--corpus", str(corpus), "--retries", "2", "--concurrency", "1")
    server, url, log = _start_server(tmp_path, "first")
    run = subprocess.Popen(command, cwd=ROOT, env=script_env(url), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while _lines(log) < 3 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=10)
    _, err = run.communicate(timeout=60)
    answered = _lines(log)
    errors = [line for line in err.decode().splitlines() if not line.startswith(PROGRESS)]
    assert run.returncode == 1 and len(errors) == 1, errors
    assert errors[0].startswith(f"reaction eval: error: cannot get an answer from the server at {url}/v1/chat/")
    assert "connection refused" in errors[0] and "ATTEST_OPENAI_BASE_URL" in errors[0]

    restarted, url2, log2 = _start_server(tmp_path, "second")
    try:
        again = subprocess.run(command, cwd=ROOT, env=script_env(url2), capture_output=True, timeout=60)
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(timeout=10)
    assert again.returncode == 0, again.stderr.decode()
    assert restarted.returncode == 0, "the fake server should stop cleanly on SIGTERM"
    print(f"\nreliability server crash: answered before the kill {answered}, asked after the restart {_lines(log2)}")
    assert answered + _lines(log2) in (12, 13), "only the samples missing (and the one in flight) are asked again"
