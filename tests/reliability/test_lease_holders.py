"""Lease holders without pids: runs that share a cache from separate pid namespaces, killed or suspended peers.

Two evals in two containers on one host are both pid 1. A lease holder is therefore a
random token, alive exactly while its process holds an OS lock (flock) on its file in
the cache directory; the kernel drops the lock when the process dies, however it dies.
The tests use real processes: two generate stages in separate pid namespaces
(`unshare --pid`, skipped where it is not permitted), a holder killed with SIGKILL, a
suspended holder (SIGSTOP, as Ctrl-Z does) waited on for a bounded time, and planted
leases whose holder claims pid 1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.store.local.cache import LeaseTimeout, ResponseCache
from evals.store.local.cache_db import CacheError
from tests.reliability.fakeserver import ROOT

KEY = "ab" * 32
_ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}

# Holds the lease on argv[2] in the cache at argv[1], says so, then sleeps until killed.
_HOLD = """
import sys, time
from pathlib import Path
from evals.store.local.cache import ResponseCache
cache = ResponseCache(Path(sys.argv[1]))
with cache.lease(sys.argv[2]) as mine:
    print("held" if mine else "filled", flush=True)
    time.sleep(120)
"""

# The generate stage over reaction cases argv[3]:argv[4] with a fake model that logs each call to argv[2];
# it starts once the file argv[2].go exists, so that both runs ask for the same samples at the same time.
_GENERATE = """
import hashlib, json, os, sys, time
from pathlib import Path
from evals.store.keys import Identity
from evals.store.local.cache import ResponseCache
from evals.engine.chat import CachedChat
from evals.engine.pipeline import generate, plan
from evals.reaction_eval import TASK, load_cases
from tests.fakes import RecordingChat

def answer(messages, schema):
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    with open(sys.argv[2], "a", encoding="utf-8") as log:
        log.write(digest + "\\n")
    time.sleep(0.1)
    return {"verdict": True, "confidence": 3, "reasoning": "r"}

class Fake:
    options = {}
    chat_json = RecordingChat(answer)

cache = ResponseCache(Path(sys.argv[1]))
identity = Identity("fake", "m", "d", {})
planned = plan(TASK, load_cases()[int(sys.argv[3]) : int(sys.argv[4])], identity, 1)
chat = CachedChat.from_backend(Fake(), cache, identity)
print("ready", flush=True)
go = Path(sys.argv[2] + ".go")
for _ in range(3000):
    if go.exists():
        break
    time.sleep(0.01)
generate(TASK, planned, chat, concurrency=4)
cache.close()
print(json.dumps({"pid": os.getpid(), "calls": chat.calls}), flush=True)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lease on KEY in tmp_path/cache."""
    command = [sys.executable, "-c", _HOLD, str(tmp_path / "cache"), KEY]
    with subprocess.Popen(command, cwd=ROOT, env=_ENV, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "held\n"
            yield proc
        finally:
            proc.kill()
            proc.wait(timeout=30)


def _cache(tmp_path: Path, notes: list[str], wait_s: float = 30.0) -> ResponseCache:
    return ResponseCache(tmp_path / "cache", lease_wait_s=wait_s, notify=notes.append)


def test_a_holder_killed_with_sigkill_is_dead_at_once(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    notes: list[str] = []
    cache = _cache(tmp_path, notes)
    try:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        with cache.lease(KEY) as mine:
            assert mine
        assert notes == [], "a dead holder is broken at once, not waited for"
    finally:
        cache.close()


def test_a_suspended_holder_is_waited_for_once_then_one_line(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    """Ctrl-Z on a peer: one notice naming the sample, the holder and the way out; then, bounded, one line."""
    notes: list[str] = []
    cache = _cache(tmp_path, notes, wait_s=0.3)
    holder.send_signal(signal.SIGSTOP)
    try:
        for _ in range(2):
            with pytest.raises(LeaseTimeout) as raised, cache.lease(KEY):
                pytest.fail("a live holder's lease was taken")
        message = str(raised.value)
        assert "\n" not in message and isinstance(raised.value, CacheError)
        assert f"sample {KEY[:12]}" in message and f"pid {holder.pid}" in message, message
        assert "after 0.3 s" in message and "python -m evals.unlock --cache-dir" in message, message
        assert len(notes) == 1, "the wait is announced once per holder, not once per try"
        assert f"sample {KEY[:12]}" in notes[0] and f"pid {holder.pid}" in notes[0], notes
        assert f"kill -CONT {holder.pid}" in notes[0] and "at most 0.3 s" in notes[0], notes
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    with cache.lease(KEY) as mine:
        assert mine, "once the holder is gone its lease is broken"
    cache.close()
    print(f"\nreliability lease: suspended holder, 1 notice, LeaseTimeout after 0.3 s: {message}")


def test_unlock_drops_a_live_holders_lease(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    notes: list[str] = []
    cache = _cache(tmp_path, notes, wait_s=0.0)
    try:
        with pytest.raises(LeaseTimeout), cache.lease(KEY):
            pytest.fail("a live holder's lease was taken")
        assert cache.unlock() == 1
        with cache.lease(KEY) as mine:
            assert mine
    finally:
        cache.close()


def _plant_lease(tmp_path: Path, holder_value: str) -> None:
    cache = ResponseCache(tmp_path / "cache")
    try:
        cache._db.set("lock:" + KEY, holder_value)
    finally:
        cache.close()


def _pid1_start() -> str:
    stat = Path("/proc/1/stat").read_text(encoding="ascii")
    return stat.rpartition(")")[2].split()[19]


@pytest.mark.parametrize("claim", ["old-format-pid-1", "token-whose-file-says-pid-1"])
def test_a_lease_claiming_pid_1_is_judged_by_its_lock_not_its_pid(tmp_path: Path, claim: str) -> None:
    """pid 1 is alive in every namespace; a lease naming it, with no lock held, belongs to nobody."""
    if claim == "old-format-pid-1":
        _plant_lease(tmp_path, f"{os.uname().nodename}:1:{_pid1_start()}")
    else:
        token = "0123456789abcdef" * 2
        holders = tmp_path / "cache" / "holders"
        holders.mkdir(parents=True)
        (holders / f"{token}.lock").write_text(json.dumps({"pid": 1, "host": os.uname().nodename}))
        _plant_lease(tmp_path, token)
    notes: list[str] = []
    cache = _cache(tmp_path, notes, wait_s=30.0)
    try:
        with cache.lease(KEY) as mine:
            assert mine
        assert notes == [], notes
    finally:
        cache.close()


def _unshare() -> list[str]:
    """`unshare --pid --fork --mount-proc`, if this machine lets us make pid namespaces."""
    exe = shutil.which("unshare")
    command = [exe, "--pid", "--fork", "--mount-proc"] if exe else []
    probe = command and subprocess.run(
        [*command, sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, timeout=30
    )
    if not probe or probe.returncode != 0 or probe.stdout.strip() != "1":
        pytest.skip("cannot create pid namespaces here (unshare --pid needs root or user namespaces)")
    return command


def test_two_runs_as_pid_1_in_separate_namespaces_share_a_cache(tmp_path: Path) -> None:
    """Two generate stages of the same 40 samples, each pid 1 in its own namespace, generating at the same time."""
    unshare = _unshare()
    cache_dir, log = tmp_path / "cache", tmp_path / "calls.log"
    log.touch()
    procs = []
    for _ in range(2):  # one after the other, so that their start times differ (as in two containers)
        command = [*unshare, sys.executable, "-c", _GENERATE, str(cache_dir), str(log), "0", "40"]
        procs.append(
            subprocess.Popen(command, cwd=ROOT, env=_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
        assert procs[-1].stdout is not None and procs[-1].stdout.readline() == "ready\n"
    log.with_name(log.name + ".go").touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert json.loads(out)["pid"] == 1
    calls = Counter(log.read_text(encoding="utf-8").split())
    duplicates = sum(calls.values()) - len(calls)
    print(
        f"\nreliability pid namespaces: 2 runs as pid 1, 40 samples each, {sum(calls.values())} model calls, "
        f"{duplicates} duplicate"
    )
    assert len(calls) == 40 and duplicates == 0
