"""Run every figure and write benchmarks/RESULTS.md: `nox -s bench` (or `python -m benchmarks.run_all`).

Figures 1-3 need no model; 4-6 share the model rounds of benchmarks/_rounds.py
(the local llama.cpp server, started once). The two longest, bench_local (three cold
runs of the reaction dev split) and bench_suite (the test suite serial, then parallel),
come last. A figure that fails is reported as
failed in the table and makes the exit status 1; the others still run.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from benchmarks import (
    bench_cli,
    bench_compare,
    bench_html,
    bench_judge,
    bench_local,
    bench_runs_compare,
    bench_store,
    bench_suite,
    bench_validity,
    fig1_rescore,
    fig2_cache_hit,
    fig3_concurrency,
    fig4_overhead,
    fig5_warm,
    fig6_inspect,
)
from benchmarks._common import REPEATS, Row, print_rows

FIGURES: tuple[ModuleType, ...] = (
    fig1_rescore,
    fig2_cache_hit,
    fig3_concurrency,
    fig4_overhead,
    fig5_warm,
    fig6_inspect,
    bench_compare,
    bench_validity,
    bench_runs_compare,
    bench_store,
    bench_html,
    bench_cli,
    bench_judge,
    bench_local,
    bench_suite,
)
RESULTS = Path(__file__).with_name("RESULTS.md")


def _run_one(module: ModuleType) -> tuple[list[Row], float, bool]:
    run: Callable[[], list[Row]] = module.run
    name = module.__name__.rsplit(".", 1)[-1]
    start = time.perf_counter()
    print(f"bench: {name} ...", file=sys.stderr, flush=True)
    try:
        rows = run()
        ok = True
    except (AssertionError, RuntimeError, OSError, ValueError, ImportError) as exc:  # a missing extra too
        traceback.print_exc()
        rows = [
            Row(name, "FAILED", "", "", "", False, f"python -m benchmarks.{name}", [f"{type(exc).__name__}: {exc}"])
        ]
        ok = False
    seconds = time.perf_counter() - start
    print(f"bench: {name} took {seconds:.0f} s", file=sys.stderr, flush=True)
    print_rows(rows)
    return rows, seconds, ok


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(rows: Sequence[Row], timings: dict[str, float], total_s: float, loads: tuple[str, str]) -> str:
    cores = os.cpu_count()
    met = {True: "yes", False: "**no**", None: "n/a"}
    lines = [
        "# Benchmark results",
        "",
        "Written by `nox -s bench` (`python -m benchmarks.run_all`); do not edit by hand. Every figure is a",
        f"ratio or a rate measured in this one run against its reference, repeated {REPEATS} times: median",
        "(min-max, n). See benchmarks/README.md for what each figure measures.",
        "",
        f"- machine: {cores} cores (os.cpu_count()), {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        f"- run at {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; total {total_s:.0f} s "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in timings.items())})",
        f"- load average (1, 5, 15 min) at the start: {loads[0]}; at the end: {loads[1]} "
        "(the machine is shared: other processes ran during these measurements)",
        "",
        "| figure | ours | reference | ratio | target | met? | command | cores |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = (r.figure, r.ours, r.reference, r.ratio, r.target, met[r.met], f"`{r.command}`", str(cores))
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "## Notes", ""]
    for r in rows:
        lines.extend(f"- {_cell(r.figure)}: {_cell(note)}" for note in r.notes)
    return "\n".join(lines) + "\n"


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> int:
    start = time.perf_counter()
    loads_start = _load()
    rows: list[Row] = []
    timings: dict[str, float] = {}
    failed = False
    for module in FIGURES:
        figure_rows, seconds, ok = _run_one(module)
        rows.extend(figure_rows)
        timings[module.__name__.rsplit(".", 1)[-1]] = seconds
        failed = failed or not ok
    total = time.perf_counter() - start
    RESULTS.write_text(_markdown(rows, timings, total, (loads_start, _load())), encoding="utf-8")
    print(f"bench: wrote {RESULTS} in {total:.0f} s", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
