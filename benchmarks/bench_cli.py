"""Fast command lines: `compare`, `runs list` and `runs show` as fresh processes against `python -c "import numpy"`.

Two recorded 226-case reaction runs are made with the stub (`--offline --split all`,
seeds 1 and 2) in a scratch cache. Each command is then run as a fresh process, as a
user runs it, alternating with the reference, `REPEATS` times after one warm-up (so
bytecode is cached, as after any first use: PYTHONDONTWRITEBYTECODE is unset for
these processes). Wall time and CPU time (RUSAGE_CHILDREN) are both measured; the
target is on the median wall time: each command within 2x the reference.

The run index's own figure (CONTRIBUTING.md's memo table): `runs list` over a thousand
copies of the first run (each under its own id), with the index against without it (the
index removed before each call), alternating with the same reference.
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
THOUSAND = 1000  # runs for the run index's figure
RECORD_FILES = ("manifest.json", "report.json", "progress.json", "prompts.json")


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



def _thousand_runs(cache_dir: Path, source: str) -> Path:
    """A cache whose runs/ holds THOUSAND copies of the recorded run `source`, each under its own id (written
    into its manifest, report and progress, as a real run's are), settled so the run index may list them."""
    out = workdir("cli-1000")
    stamp, task, _ = source.split("-", 2)
    files = {name: (cache_dir / "runs" / source / name).read_text(encoding="utf-8") for name in RECORD_FILES}
    for i in range(THOUSAND):
        run_id = f"{stamp}-{task}-{i:08x}"
        (out / "runs" / run_id).mkdir(parents=True)
        for name, text in files.items():
            (out / "runs" / run_id / name).write_text(text.replace(source, run_id), encoding="utf-8")
    time.sleep(2.5)  # the index leaves files changed in the last two seconds out (run_index.SETTLE_NS)
    return out


def _index_rows(cache_dir: Path, source: str, reference: Sequence[str]) -> list[Row]:
    """`runs list` over a thousand runs with the run index (runs/.index.json) against without it (the index
    removed before each call, so every manifest and report is read and checked): the memo's own figure."""
    many = _thousand_runs(cache_dir, source)
    listing = [sys.executable, "-m", "evals.runs", "--cache-dir", str(many), "list"]
    index = many / "runs" / ".index.json"
    _timed(listing)  # warm-up, and the index written
    if not index.is_file():
        raise RuntimeError(f"runs list over {THOUSAND} runs wrote no run index at {index}")
    walls: dict[str, list[float]] = {"with": [], "without": [], "numpy": []}
    for _ in range(REPEATS):
        walls["with"].append(_timed(listing)[0])
        index.unlink()
        walls["without"].append(_timed(listing)[0])
        walls["numpy"].append(_timed(reference)[0])
    with_, without, ref = (Spread.of(walls[k]) for k in ("with", "without", "numpy"))
    return [
        Row(
            f"`runs list` over {THOUSAND} runs as a fresh process, with the run index",
            with_.fmt(unit="s"),
            f"without the index (removed before each call): {without.fmt(unit='s')}",
            f"{with_.median / without.median:.2f}x",
            f"<= {TARGET:g}x import numpy ({ref.fmt(unit='s')})",
            with_.median / ref.median <= TARGET,
            script_command("bench_cli.py"),
            [
                f"with the index {with_.median / ref.median:.1f}x import numpy; without it "
                f"{without.median / ref.median:.1f}x, which "
                f"{'misses' if without.median / ref.median > TARGET else 'meets'} the {TARGET:g}x target"
            ],
        )
    ]


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
    return rows + _index_rows(cache_dir, base, reference)


if __name__ == "__main__":
    print_rows(run())
