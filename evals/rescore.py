"""Re-score past runs with today's scorers, from the cache alone.

`python -m evals.rescore` scores the latest complete run of every task (or
`--run ID`, or `--all` runs) and shows each run's old and new score side by side.
It builds no backend and no HTTP client: there is nothing here that could call a
model. A sample missing from the cache is an error, never a model request.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attest.errors import AttestError, run_reporting_errors
from evals import explanation_eval, reaction_eval, tagging_eval
from evals.cache import ResponseCache, resolve_cache_dir
from evals.cases import AnyCase
from evals.pipeline import EvalResult, MissingSampleError, Task, load_cases, runs_dir, score_planned, write_json

__all__ = ["TASKS", "find_runs", "main", "rescore_run"]

TASKS: dict[str, Task[Any]] = {t.name: t for t in (tagging_eval.TASK, reaction_eval.TASK, explanation_eval.TASK)}


class RunError(AttestError):
    """A run directory cannot be re-scored."""


def _manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: cannot read the run manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("task") not in TASKS:
        raise RunError(f"{path}: not an attest run manifest (no known 'task')")
    return data


def find_runs(cache_dir: Path, *, run_id: str | None = None, every: bool = False) -> list[Path]:
    """The run directories to re-score: one named run, all complete runs, or the latest per task."""
    root = runs_dir(cache_dir)
    if run_id is not None:
        if not (root / run_id / "manifest.json").is_file():
            raise RunError(f"no run {run_id!r} in {root}: list them with `ls {root}`")
        return [root / run_id]
    complete = {d: task for d in sorted(root.glob("*/")) if (task := _complete_task(d)) is not None}
    if every:
        return list(complete)
    latest = {task: d for d, task in complete.items()}  # run ids sort by time: the last one wins
    return list(latest.values())


def _complete_task(run_dir: Path) -> str | None:
    """The task of a complete run, or None for a run still generating or not a run at all."""
    try:
        manifest = _manifest(run_dir)
    except RunError:
        return None
    return str(manifest["task"]) if manifest.get("status") == "complete" else None


def rescore_run(run_dir: Path, cache: ResponseCache, corpus: Path | None = None) -> tuple[dict[str, Any], EvalResult]:
    """Score a run's cached samples with today's scorer against today's corpus labels."""
    manifest = _manifest(run_dir)
    task = TASKS[manifest["task"]]
    cases: dict[str, AnyCase] = {c.id: c for c in load_cases(task, corpus or Path(manifest["corpus"]))}
    gone = sorted({s["case"] for s in manifest["samples"]} - set(cases))
    if gone:
        raise RunError(
            f"{run_dir.name}: cases {gone[:5]} are no longer in {manifest['corpus']}; rescore with --corpus OLD_FILE"
        )
    samples = ((cases[s["case"]], int(s["sample"]), str(s["key"])) for s in manifest["samples"])
    try:
        return manifest, score_planned(task, samples, cache)
    except MissingSampleError as exc:
        raise RunError(f"run {run_dir.name}: {exc}") from None


def _old_score(run_dir: Path) -> float | None:
    try:
        value = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))["overall"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, int | float) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rescore", description="Re-score past runs from the cache; never calls a model."
    )
    parser.add_argument("--run", help="re-score this run id only")
    parser.add_argument("--all", action="store_true", help="re-score every complete run, not only the latest per task")
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    parser.add_argument("--corpus", type=Path, help="read the labels from this corpus file instead of the run's own")
    args = parser.parse_args(argv)
    return run_reporting_errors("rescore", lambda: _rescore(args))


def _rescore(args: argparse.Namespace) -> int:
    cache_dir = resolve_cache_dir(args.cache_dir)
    runs = find_runs(cache_dir, run_id=args.run, every=args.all)
    if not runs:
        print(
            f"rescore: no complete runs in {runs_dir(cache_dir)}: run an eval first (nox -s eval-reaction)",
            file=sys.stderr,
        )
        return 1
    cache = ResponseCache(cache_dir)
    try:
        return _rescore_runs(runs, cache, args.corpus)
    finally:
        cache.close()


def _rescore_runs(runs: list[Path], cache: ResponseCache, corpus: Path | None) -> int:
    start = time.perf_counter()
    samples = 0
    print(f"{'run':<36} {'task':<12} {'samples':>7} {'old':>7} {'new':>7}")
    for run_dir in runs:
        manifest, result = rescore_run(run_dir, cache, corpus)
        samples += result.n
        old = _old_score(run_dir)
        print(f"{run_dir.name:<36} {result.task:<12} {result.n:>7} {_f(old):>7} {result.overall:>7.3f}")
        write_json(
            run_dir / "rescore.json",
            {"run_id": manifest["run_id"], "rescored_at": time.time(), "old_overall": old, **result.to_json()},
        )
    print(
        f"re-scored {len(runs)} run(s), {samples} samples, in {time.perf_counter() - start:.3f} s "
        "from the cache (no backend exists in rescore)"
    )
    for warning in cache.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
