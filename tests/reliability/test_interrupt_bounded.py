"""Bounded concurrency and Ctrl-C: `evals.engine.bounded.run_bounded` stops at once and starts nothing new.

A real SIGINT goes to a subprocess running `run_bounded` over 100 fake calls that take
2 s each, 4 in flight. The first Ctrl-C must stop submission (no call starts after it,
beyond those a worker had already picked up), not wait for the calls in flight beyond
a short grace, and re-raise KeyboardInterrupt; the calls in flight may still finish in
their threads before the process exits. The child reports what it saw; the test
bounds every wait, and the subprocess's timeout is what catches a run that waits for
all 100 calls (as `ThreadPoolExecutor`'s shutdown does).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evals.engine.bounded import run_bounded
from tests.reliability.fakeserver import ROOT

CONCURRENCY = 4
_ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}

# argv: module:function, log file, seconds per call, concurrency. Logs "start i" / "done i" per call; on
# KeyboardInterrupt prints what had started and finished then, and 2.5 s later, and exits 130.
_CHILD = """
import importlib, json, signal, sys, threading, time
# A shell's background job (a CI runner, `make test &`) starts with SIGINT ignored, and Python then
# installs no KeyboardInterrupt handler; a user's terminal does not. Restore Python's own handler.
signal.signal(signal.SIGINT, signal.default_int_handler)
module, name = sys.argv[1].split(":")
run = getattr(importlib.import_module(module), name)
log = open(sys.argv[2], "a", buffering=1, encoding="utf-8")
lock = threading.Lock()
started, finished = [], []

def call(i):
    with lock:
        started.append(i)
        log.write(f"start {i}\\n")
    time.sleep(float(sys.argv[3]))
    with lock:
        finished.append(i)
        log.write(f"done {i}\\n")

try:
    run(call, list(range(100)), int(sys.argv[4]))
except KeyboardInterrupt:
    raised = time.monotonic()
    with lock:
        at_raise = [len(started), len(finished)]
    time.sleep(2.5)
    with lock:
        later = [len(started), len(finished)]
    print(json.dumps({"raised": raised, "at_raise": at_raise, "later": later}), flush=True)
    sys.exit(130)
"""


def _starts(log: Path) -> int:
    return sum(line.startswith("start ") for line in log.read_text(encoding="utf-8").splitlines())


def interrupt(
    tmp_path: Path, target: str = "evals.engine.bounded:run_bounded"
) -> tuple[int, dict[str, list[int]], float]:
    """Run the child, send SIGINT in its second batch of calls; returns the starts seen then, its report, seconds."""
    log = tmp_path / "calls.log"
    log.touch()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, target, str(log), "2.0", str(CONCURRENCY)],
        cwd=ROOT,
        env=_ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while _starts(log) < 6 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # mid-batch: no call ends (and none may start) for the next 1.5 s
        before = _starts(log)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait(timeout=30)
    assert child.returncode == 130, out
    report = json.loads(out)
    return before, report, report["raised"] - sent


@pytest.mark.slow
def test_the_first_ctrl_c_starts_nothing_new_and_does_not_wait_for_calls_in_flight(tmp_path: Path) -> None:
    before, report, seconds = interrupt(tmp_path)
    (started, finished), (started_later, finished_later) = report["at_raise"], report["later"]
    after = started_later - before
    print(
        f"\nreliability interrupt: calls started before SIGINT {before}, after it {after}, in flight at the "
        f"re-raise {started - finished}, finished in their threads afterwards {finished_later - finished}, "
        f"KeyboardInterrupt re-raised {seconds:.2f} s after SIGINT"
    )
    assert after == 0, "calls were started after the interrupt"
    assert finished < started, "the re-raise waited for every call in flight"
    assert finished_later == started_later, "calls in flight at the interrupt keep running and finish"
    assert started_later < 100


def test_the_first_error_stops_submission_and_is_reraised() -> None:
    # No timing: items after the failing one wait until its worker has recorded the
    # error and stopped (its thread has ended), so only the items other workers had
    # already taken may start: 0..5 and at most CONCURRENCY - 1 more.
    calls: list[int] = []
    lock = threading.Lock()
    failing: list[threading.Thread] = []
    failing_known = threading.Event()

    def call(i: int) -> None:
        with lock:
            calls.append(i)
        if i == 5:
            failing.append(threading.current_thread())
            failing_known.set()
            raise ValueError("item 5 failed")
        if i > 5:
            assert failing_known.wait(10)
            failing[0].join(10)

    with pytest.raises(ValueError, match="item 5 failed"):
        run_bounded(call, list(range(100)), CONCURRENCY)
    assert 5 in calls and len(calls) <= 6 + CONCURRENCY - 1, calls


@pytest.mark.parametrize("concurrency", [1, 3])
def test_every_item_runs_once_with_at_most_concurrency_in_flight(concurrency: int) -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    done: list[int] = []

    def call(i: int) -> None:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.005)
        with lock:
            state["now"] -= 1
            done.append(i)

    run_bounded(call, list(range(30)), concurrency)
    assert sorted(done) == list(range(30))
    assert 1 <= state["peak"] <= concurrency
