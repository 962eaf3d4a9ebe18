"""The embedded model at the machine's speed: today's local server against the old one, side by side, cold.

Each contender is a cold `python evals/run_reaction_eval.py --backend local` on the
reaction dev split (a fresh cache each time), as a user runs it, in a subprocess:
- old: one server with one thread and one slot (ATTEST_LOCAL_SERVERS=1
  ATTEST_LOCAL_THREADS=1 ATTEST_LOCAL_SLOTS=1), what the backend ran before;
- new: the defaults (`ServerSettings`: one one-thread, one-slot server per CPU this
  process may use, answering in parallel).
Wall time and CPU time (the run and its llama.cpp server process, from
RUSAGE_CHILDREN: the server is waited for when the run stops it) are measured per run;
the order alternates between repeats. Targets: new wall <= 40% of old, and CPU
time / wall >= 1.7 cores for the new run (imports and server start are in both, so
this understates the generation's own use). The new settings run a second time, and
the two runs' answers must be identical (temperature 0, same settings).

`python -m benchmarks.bench_local [CASES]` (default: the whole dev split, 144 cases;
ATTEST_BENCH_LOCAL_CASES too); repeats from ATTEST_BENCH_LOCAL_REPEATS (default 1:
a full repeat is two cold runs of the split).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks._common import ROOT, Row, Spread, print_rows, rotated, script_command, workdir

__all__ = ["run"]

WALL_TARGET = 0.40
CORES_TARGET = 1.7
OLD = {"ATTEST_LOCAL_SERVERS": "1", "ATTEST_LOCAL_THREADS": "1", "ATTEST_LOCAL_SLOTS": "1"}


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float
    answers: dict[str, str]

    @property
    def cores(self) -> float:
        return self.cpu_s / self.wall_s


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cold_run(settings: dict[str, str], cases: int, label: str) -> Measured:
    cache_dir = workdir(f"local-{label}")
    env = {k: v for k, v in os.environ.items() if k not in OLD}
    env.update(settings)
    env["XDG_CACHE_HOME"] = str(cache_dir / "xdg")
    argv = [sys.executable, str(ROOT / "evals/run_reaction_eval.py"), "--backend", "local", "--split", "dev"]
    argv += ["--cache-dir", str(cache_dir), "--limit", str(cases), "--json"]
    cpu0, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=4 * 3600)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"the {label} run failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return Measured(wall, cpu, _texts(cache_dir))


def _texts(cache_dir: Path) -> dict[str, str]:
    """The answer text of every sample of the run, read from the cache through its manifest's keys."""
    from evals.store.local.cache import ResponseCache

    manifest = json.loads(next((cache_dir / "runs").glob("*/manifest.json")).read_text(encoding="utf-8"))
    cache = ResponseCache(cache_dir)
    try:
        entries = cache.get_many([s["key"] for s in manifest["samples"]])
    finally:
        cache.close()
    return {f"{s['case']}#{s['sample']}": (e.text if (e := entries[s["key"]]) else "") for s in manifest["samples"]}


def _case_count(argv: list[str]) -> int:
    if argv:
        return int(argv[0])
    return int(os.environ.get("ATTEST_BENCH_LOCAL_CASES", "144"))


def run(argv: list[str] | None = None) -> list[Row]:
    cases = _case_count(argv or [])
    repeats = max(1, int(os.environ.get("ATTEST_BENCH_LOCAL_REPEATS", "1")))
    old: list[Measured] = []
    new: list[Measured] = []
    for i in range(repeats):
        for label in rotated(["old", "new"], i):
            (old if label == "old" else new).append(_cold_run(OLD if label == "old" else {}, cases, label))
    rerun = _cold_run({}, cases, "rerun")
    return _rows(cases, old, new, rerun)


def _rows(cases: int, old: list[Measured], new: list[Measured], rerun: Measured) -> list[Row]:
    o, n = Spread.of(m.wall_s for m in old), Spread.of(m.wall_s for m in new)
    cores = Spread.of(m.cores for m in new)
    same = sum(rerun.answers[k] == v for k, v in new[0].answers.items())
    changed = sum(old[0].answers.get(k) != v for k, v in new[0].answers.items())
    command = script_command("bench_local.py") + f" {cases}"
    return [
        Row(
            f"cold reaction dev ({cases} cases), local backend: new settings vs one server, one thread, one slot",
            n.fmt(unit="s"),
            f"one server, one thread, one slot: {o.fmt(unit='s')}",
            f"{n.median / o.median:.0%}",
            f"<= {WALL_TARGET:.0%}",
            n.median / o.median <= WALL_TARGET,
            command,
            [
                f"old run used {Spread.of(m.cores for m in old).fmt(unit='cores')}; {changed} of {len(new[0].answers)} "
                "answers differ between the settings (each setting has its own cache keys)"
            ],
        ),
        Row(
            "local backend, CPU during a cold run (run + server process CPU time / wall)",
            cores.fmt(unit="cores"),
            f"{os.cpu_count()} cores on the machine",
            "",
            f">= {CORES_TARGET} cores",
            cores.median >= CORES_TARGET,
            command,
            ["imports and server start-up are in the wall time, so this understates the generation's own use"],
        ),
        Row(
            "local backend, temperature 0: a cold rerun with the same settings gives the same answers",
            f"{same} of {len(new[0].answers)} identical",
            "the first run with these settings",
            "",
            "all identical",
            same == len(new[0].answers),
            command,
        ),
    ]


if __name__ == "__main__":
    print_rows(run(sys.argv[1:]))
