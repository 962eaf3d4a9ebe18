"""Ctrl-C during a real `local` run: the process exits within 2 s, with 130, and records the run as interrupted.

The llama.cpp server runs in a child process of its own, killed at exit; in-process it
hung the interpreter's exit for ever (xllamacpp's destructor joins a thread nothing stops).
SIGINT lands at seeded random moments after the run has recorded its manifest. Bounded:
three tries, each with a timeout.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TRIES = 3
EXIT_WITHIN_S = 2.0
TAG = f"interrupt-{os.getpid()}-{time.time_ns()}"


def _manifest(cache_dir: Path) -> Path | None:
    found = sorted((cache_dir / "runs").glob("*/manifest.json"))
    return found[0] if found else None


def _wait_for_manifest(proc: subprocess.Popen[str], cache_dir: Path, timeout_s: float) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        found = _manifest(cache_dir)
        if found is not None:
            return found
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"the run recorded no manifest within {timeout_s:g} s (exit code {proc.poll()})")


def _sigint_as_a_terminal_gives_it() -> None:
    """In the child before exec: SIGINT at its default, so Python installs its Ctrl-C handler.

    A suite started in the background (`pytest ... &` in a script) inherits SIGINT ignored,
    and so would every run it starts: the SIGINT below would then do nothing at all.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_once(tmp: Path, delay_s: float) -> tuple[float, int, str]:
    cache_dir = tmp / "cache"
    env = {**os.environ, "ATTEST_TEST_RUN": TAG, "XDG_CACHE_HOME": str(tmp / "xdg")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    argv = [sys.executable, str(ROOT / "evals/run_reaction_eval.py"), "--backend", "local", "--limit", "8"]
    with subprocess.Popen(
        [*argv, "--cache-dir", str(cache_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_sigint_as_a_terminal_gives_it,
    ) as proc:
        manifest = _wait_for_manifest(proc, cache_dir, 120.0)
        time.sleep(delay_s)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"still running 30 s after SIGINT (sent {delay_s:.2f} s into generation)")
        exited = time.monotonic() - sent
        assert proc.stderr is not None
        stderr = proc.stderr.read()
    status = json.loads(manifest.read_text(encoding="utf-8"))["status"]
    assert proc.returncode in (0, 130), stderr
    return exited, proc.returncode, status


def test_ctrl_c_during_a_local_run_exits_fast_and_records_interrupted(tmp_path: Path) -> None:
    rng = random.Random(23)
    interrupted = 0
    for n in range(TRIES):
        delay = rng.uniform(0.0, 4.0)
        exited, code, status = _interrupt_once(tmp_path / f"try{n}", delay)
        if code == 0:  # the run finished before the signal: nothing to check
            assert status == "complete"
            continue
        interrupted += 1
        assert exited < EXIT_WITHIN_S, f"exited {exited:.2f} s after SIGINT sent {delay:.2f} s into generation"
        assert status == "interrupted", f"SIGINT {delay:.2f} s in: manifest status {status!r}"
    assert interrupted >= 1, "every run finished before its SIGINT: lengthen the run"
    assert _processes_tagged(TAG) == [], "a llama.cpp server process outlived its run"


def _processes_tagged(tag: str) -> list[int]:
    """The processes whose environment holds `tag` (the run's server inherits the run's environment)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if tag.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found
