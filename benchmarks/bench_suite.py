"""The test suite serial against parallel (pytest-xdist), side by side in one run.

`python -m benchmarks.bench_suite [PYTEST ARGS]` runs `pytest -p no:cacheprovider -q`
on ARGS (default: the whole suite, `tests`, real-model tests included) twice: serial
(`-n 0`) and parallel (`-n auto --dist loadgroup`, what `make test` runs), alternating
the order between repeats (ATTEST_BENCH_SUITE_REPEATS, default 1: the whole suite
takes minutes). Target: parallel wall time at most 50% of serial. The last figure of
run_all (about 12 minutes on 2 cores); try it on a small subset first, e.g.
`python -m benchmarks.bench_suite tests/analysis/test_stats.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence

from benchmarks._common import ROOT, Row, Spread, print_rows, rotated

__all__ = ["run"]

TARGET = 0.50
MODES = {"serial": ["-n", "0"], "parallel": ["-n", "auto", "--dist", "loadgroup"]}


def _suite(mode: str, args: Sequence[str]) -> float:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *MODES[mode], *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=3 * 3600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = done.stdout.strip().splitlines()[-3:]
        raise RuntimeError(f"the {mode} suite failed ({done.returncode}): {' / '.join(tail)}")
    return seconds


def run(args: Sequence[str] = ()) -> list[Row]:
    args = list(args) or ["tests"]
    repeats = max(1, int(os.environ.get("ATTEST_BENCH_SUITE_REPEATS", "1")))
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    for i in range(repeats):
        for mode in rotated(list(MODES), i):
            seconds[mode].append(_suite(mode, args))
    serial, parallel = Spread.of(seconds["serial"]), Spread.of(seconds["parallel"])
    ratio = parallel.median / serial.median
    command = "python -m benchmarks.bench_suite " + " ".join(args)
    return [
        Row(
            f"pytest {' '.join(args)}: parallel (-n auto, {os.cpu_count()} cores) vs serial",
            parallel.fmt(unit="s"),
            f"serial: {serial.fmt(unit='s')}",
            f"{ratio:.0%}",
            f"<= {TARGET:.0%}",
            ratio <= TARGET,
            command,
        )
    ]


if __name__ == "__main__":
    print_rows(run(sys.argv[1:]))
