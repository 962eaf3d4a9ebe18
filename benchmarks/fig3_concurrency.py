"""Figure 3, generation concurrency: speedup of the generate stage against concurrency 1.

A fake OpenAI-compatible server (benchmarks/_fakeserver.py, its own process, a
real socket on 127.0.0.1) answers every request after a fixed 100 ms with 8
slots. `generate` with an `openai` backend fills a fresh cache for 32 reaction
cases at concurrency 1, 2, 4 and 8 (the order rotates across repeats). The
speedup at c is the time at 1 over the time at c within one repeat; the ideal is
min(c, slots). The server reports the most requests it had in flight, which must
never exceed the concurrency asked for.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from attest.backends.openai import OpenAIBackend
from attest.backends.retry import RetryPolicy
from benchmarks._common import REPEATS, Row, Spread, print_rows, rotated, script_command, timed, workdir
from evals import reaction_eval
from evals.engine.chat import CachedChat
from evals.engine.pipeline import generate, plan
from evals.store.local.cache import ResponseCache

LEVELS = (1, 2, 4, 8)
SLOTS = 8
DELAY_S = 0.1
SAMPLES = 32
TARGET = 0.85  # of the ideal speedup


def _start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("_fakeserver.py")),
            "--slots",
            str(SLOTS),
            "--delay",
            str(DELAY_S),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}"


def _one(url: str, client: httpx.Client, concurrency: int, directory: Path) -> tuple[float, int]:
    """Seconds to generate SAMPLES fresh samples at `concurrency`, and the server's max in flight."""
    backend = OpenAIBackend("fake", base_url=url, client=client, retry=RetryPolicy(attempts=1, timeout_s=30))
    cache = ResponseCache(directory)
    try:
        chat = CachedChat.from_backend(backend, cache)
        planned = plan(reaction_eval.TASK, reaction_eval.load_cases()[:SAMPLES], chat.identity, 1)
        client.get(f"{url}/stats?reset=1")
        stats, seconds = timed(lambda: generate(reaction_eval.TASK, planned, chat, concurrency=concurrency))
        assert stats.misses == SAMPLES, f"expected {SAMPLES} model calls, made {stats.misses}"
        return seconds, int(client.get(f"{url}/stats").json()["max_in_flight"])
    finally:
        cache.close()


def run() -> list[Row]:
    proc, url = _start_server()
    root = workdir("concurrency")
    times: dict[int, list[float]] = {c: [] for c in LEVELS}
    inflight: dict[int, int] = dict.fromkeys(LEVELS, 0)
    try:
        with httpx.Client(limits=httpx.Limits(max_connections=32, max_keepalive_connections=32)) as client:
            for i in range(REPEATS):
                for c in rotated(LEVELS, i):
                    seconds, most = _one(url, client, c, root / f"r{i}-c{c}")
                    times[c].append(seconds)
                    inflight[c] = max(inflight[c], most)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return [_row(c, times, inflight) for c in LEVELS[1:]] + [_inflight_row(inflight)]


def _row(c: int, times: dict[int, list[float]], inflight: dict[int, int]) -> Row:
    speedup = Spread.of(t1 / tc for t1, tc in zip(times[1], times[c], strict=True))
    ideal = min(c, SLOTS)
    fraction = Spread.of(s / ideal for s in speedup.values)
    return Row(
        f"3. concurrency {c}: speedup",
        f"{speedup.fmt()}x; {Spread.of(times[c]).fmt(unit='s')} for {SAMPLES} samples",
        f"concurrency 1: {Spread.of(times[1]).fmt(unit='s')}; ideal {ideal}x",
        f"{fraction.fmt()} of ideal",
        f">= {TARGET:.0%} of ideal",
        fraction.median >= TARGET,
        script_command("fig3_concurrency.py"),
        [f"fake server: {DELAY_S * 1000:.0f} ms per answer, {SLOTS} slots, own process, 127.0.0.1 socket"],
    )


def _inflight_row(inflight: dict[int, int]) -> Row:
    shown = ", ".join(f"c={c}: {inflight[c]}" for c in LEVELS)
    return Row(
        "3. max requests in flight at the server",
        shown,
        "the concurrency asked for",
        ", ".join(f"{inflight[c]}/{c}" for c in LEVELS),
        "<= concurrency, every run",
        all(inflight[c] <= c for c in LEVELS),
        script_command("fig3_concurrency.py"),
    )


if __name__ == "__main__":
    print_rows(run())
