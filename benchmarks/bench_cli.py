"""Fast command lines: `compare`, `runs list` and `runs show` as fresh processes against `python -c "import numpy"`.

Two recorded 226-case reaction runs are made with the stub (`--offline --split all`,
seeds 1 and 2) in a scratch cache. Each command is then run as a fresh process, as a
user runs it, alternating with the reference, `REPEATS` times after one warm-up (so
bytecode is cached, as after any first use: PYTHONDONTWRITEBYTECODE is unset for
these processes). Wall time and CPU time (RUSAGE_CHILDREN) are both measured; the
target is on the median wall time: each command within 2x the reference.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import REPEATS, ROOT, Row, Spread, print_rows, script_command, workdir

__all__ = ["run"]

TARGET = 2.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: Sequence[str]) -> tuple[float, float]:
    cpu0, start = _cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=ROOT, check=False, timeout=300)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu0
    if done.returncode not in (0, 1, 3):  # compare exits 1 (regress) or 3 (inconclusive) by design
        raise RuntimeError(f"{' '.join(argv[1:4])} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return wall, cpu


def _two_runs(cache_dir: Path) -> list[str]:
    for seed in ("1", "2"):
        argv = [sys.executable, str(ROOT / "evals/run_reaction_eval.py"), "--offline", "--split", "all"]
        _timed([*argv, "--seed", seed, "--cache-dir", str(cache_dir), "--json"])
    return sorted(p.name for p in (cache_dir / "runs").iterdir() if p.is_dir())


def run() -> list[Row]:
    cache_dir = workdir("cli")
    base, cand = _two_runs(cache_dir)[:2]
    py, where = sys.executable, ["--cache-dir", str(cache_dir)]
    commands = {
        "compare BASE CAND (226 cases)": [py, "-m", "evals.compare", *where, base, cand],
        "runs list": [py, "-m", "evals.runs", *where, "list"],
        "runs show RUN": [py, "-m", "evals.runs", *where, "show", base],
    }
    reference = [py, "-c", "import numpy"]
    walls: dict[str, list[float]] = {name: [] for name in [*commands, "numpy"]}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    for argv in [*commands.values(), reference]:
        _timed(argv)  # warm-up: bytecode written, files in the page cache
    for _ in range(REPEATS):
        for name, argv in [*commands.items(), ("numpy", reference)]:
            wall, cpu_s = _timed(argv)
            walls[name].append(wall)
            cpus[name].append(cpu_s)
    ref, ref_cpu = Spread.of(walls["numpy"]), Spread.of(cpus["numpy"])
    rows = []
    for name in commands:
        ours, cpu = Spread.of(walls[name]), Spread.of(cpus[name])
        ratio = ours.median / ref.median
        rows.append(
            Row(
                f"`{name}` as a fresh process",
                ours.fmt(unit="s"),
                f'python -c "import numpy": {ref.fmt(unit="s")}',
                f"{ratio:.1f}x",
                f"<= {TARGET:g}x",
                ratio <= TARGET,
                script_command("bench_cli.py"),
                [f"CPU time {cpu.fmt(unit='s')} vs {ref_cpu.fmt(unit='s')} ({cpu.median / ref_cpu.median:.1f}x)"],
            )
        )
    return rows


if __name__ == "__main__":
    print_rows(run())
