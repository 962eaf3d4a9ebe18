"""Figure 1, rescore throughput: samples re-scored per second from a 10,000-sample cache.

The cache is built the normal way: every real corpus case of the three tasks,
repeated until the three runs hold 10,000 samples in all, planned with `plan`
and filled by `generate` through `CachedChat.from_backend(StubBackend(answer=task.stub_answer), cache)`, each run
with its manifest. `rescore_run` then re-scores the three run directories.

Reference, in the same run: the three tasks' `score_one` over the same
(case, answer) pairs held in memory: the scoring work alone, without the cache
reads, the manifest and the aggregation. If the target is missed, one more
rescore runs under cProfile and the notes name the most expensive functions.
"""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path
from typing import Any

from attest.backends.stub import StubBackend
from benchmarks._common import REPEATS, Row, Spread, print_rows, rotated, script_command, timed, workdir
from evals import tasks
from evals.cli.rescoring import rescore_run
from evals.engine.chat import CachedChat
from evals.engine.execute import RunSpec, execute
from evals.engine.pipeline import load_cases
from evals.store.keys import Identity
from evals.store.local.cache import ResponseCache
from evals.store.models import Manifest
from evals.store.records import DirStore

TOTAL = 10_000
TARGET = 10_000.0  # samples per second


def _build(directory: Path, cache: ResponseCache) -> tuple[list[Manifest], list[tuple[str, Any, str]]]:
    """Three complete runs holding >= TOTAL samples; returns their manifests and every (task, case, text)."""
    store = DirStore(directory / "runs")
    share = -(-TOTAL // len(tasks.names()))
    manifests, answers = [], []
    for task in tasks.all_tasks():
        backend = StubBackend(answer=task.stub_answer)
        chat = CachedChat.from_backend(backend, cache, Identity.of(backend))
        name = task.name
        cases = load_cases(task)
        repeat = -(-share // len(cases))
        outcome = execute(RunSpec(task, cases, cases, task.corpus, "all", repeat), chat, store)
        manifests.append(outcome.manifest)
        answers.extend(_answers(name, outcome.manifest, {c.id: c for c in cases}, cache))
    return manifests, answers


def _answers(name: str, manifest: Manifest, cases: dict[str, Any], cache: ResponseCache) -> list[tuple[str, Any, str]]:
    out = []
    for s in manifest.samples:
        entry = cache.get(s.key)
        assert entry is not None, "the generate stage left a sample out of the cache"
        out.append((name, cases[s.case], entry.text))
    return out


def _rescore_all(manifests: list[Manifest], cache: ResponseCache) -> int:
    return sum(rescore_run(m, cache).result.n for m in manifests)


def _score_only(answers: list[tuple[str, Any, str]]) -> int:
    for name, case, text in answers:
        tasks.get(name).score_one(case, text)
    return len(answers)


def _profile(run_dirs: list[Manifest], cache: ResponseCache, top: int = 6) -> list[str]:
    profiler = cProfile.Profile()
    profiler.runcall(_rescore_all, run_dirs, cache)
    stats = pstats.Stats(profiler)
    total = max(stats.total_tt, 1e-9)  # type: ignore[attr-defined]
    rows = [
        (tottime, cumtime, f"{Path(path).parent.name}/{Path(path).name}:{line}({func})" if line else func)
        for (path, line, func), (_, _, tottime, cumtime, _) in stats.stats.items()  # type: ignore[attr-defined]
    ]
    by_own = sorted(rows, reverse=True)[:top]
    ours = [r for r in rows if ("evals" in r[2] or "_eval" in r[2]) and r[1] < 0.9 * total]
    by_cum = sorted(ours, key=lambda r: r[1], reverse=True)[:top]
    return [
        "missed: one rescore under cProfile; by own time: "
        + "; ".join(f"{where} {own / total:.0%}" for own, _, where in by_own),
        "by cumulative time (below the entry points): "
        + "; ".join(f"{where} {cum / total:.0%}" for _, cum, where in by_cum),
    ]


def run() -> list[Row]:
    directory = workdir("rescore")
    cache = ResponseCache(directory)
    try:
        (run_dirs, answers), build_s = timed(lambda: _build(directory, cache))
        ours, ref = [], []
        for i in range(REPEATS):
            for which in rotated(("rescore", "score_only"), i):
                if which == "rescore":
                    n, seconds = timed(lambda: _rescore_all(run_dirs, cache))
                    ours.append(n / seconds)
                else:
                    n, seconds = timed(lambda: _score_only(answers))
                    ref.append(n / seconds)
        ratio = Spread.of(o / r for o, r in zip(ours, ref, strict=True))
        rate = Spread.of(ours)
        notes = [
            f"{len(answers)} samples in 3 runs (tagging, reaction, explanation), built by the generate stage "
            f"with the stub backend in {build_s:.1f} s ({len(answers) / build_s:.0f} samples/s written)"
        ]
        if rate.median < TARGET:
            notes.extend(_profile(run_dirs, cache))
        return [
            Row(
                "1. rescore throughput",
                rate.fmt(unit="samples/s"),
                "score_one alone, in memory: " + Spread.of(ref).fmt(unit="samples/s"),
                ratio.fmt(unit="of score_one alone"),
                f">= {TARGET:,.0f} samples/s",
                rate.median >= TARGET,
                script_command("fig1_rescore.py"),
                notes,
            )
        ]
    finally:
        cache.close()


if __name__ == "__main__":
    print_rows(run())
