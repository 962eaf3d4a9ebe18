"""The run scripts' shared entry point: generate (cached), then score, then report.

`python evals/run_reaction_eval.py --backend local --split dev` and friends are
thin wrappers over `main(task, argv)`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attest.backends.registry import make_backend
from attest.backends.retry import RetryPolicy
from attest.backends.settings import Settings
from attest.backends.types import Backend, BackendError
from attest.cli import add_backend_options
from attest.errors import AttestError, run_reporting_errors
from evals.cache import Identity, ResponseCache, resolve_cache_dir
from evals.pipeline import (
    CachedChat,
    EvalResult,
    GenerateStats,
    Task,
    generate,
    load_cases,
    manifest_for,
    new_run_id,
    plan,
    runs_dir,
    score_planned,
    stderr_progress,
    write_json,
)

__all__ = ["main", "print_report"]

DEFAULT_CONCURRENCY = {"openai": 4}


def _parser(task: Task[Any]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"run_{task.name}_eval.py", description=f"Generate (cached) and score the {task.name} eval."
    )
    parser.add_argument("--split", choices=("train", "dev", "all"), default="dev", help="which cases (default dev)")
    parser.add_argument("--repeat", type=int, default=1, help="samples per case (default 1)")
    parser.add_argument("--concurrency", type=int, help="model calls in flight (default: 1, or 4 for openai)")
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    parser.add_argument("--corpus", type=Path, help=f"corpus file (default {task.corpus.name} beside this script)")
    parser.add_argument("--offline", action="store_true", help="use the stub backend: no model, no network")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--worst", type=int, default=5, help="how many of the worst cases to show (default 5)")
    add_backend_options(parser, default_backend="auto")
    return parser


def main(task: Task[Any], argv: Sequence[str] | None = None) -> int:
    args = _parser(task).parse_args(argv)
    try:
        return run_reporting_errors(f"{task.name} eval", lambda: _run(task, args))
    except KeyboardInterrupt:
        print(f"\n{task.name} eval: interrupted; every answer so far is cached, rerun to continue", file=sys.stderr)
        return 130


def _backend(args: argparse.Namespace) -> Backend:
    retry = RetryPolicy(attempts=max(1, args.retries), timeout_s=args.timeout)
    kind = "stub" if args.offline else args.backend
    return make_backend(Settings.resolve(backend=kind, model=args.model, default_backend="auto", retry=retry))


def _run(task: Task[Any], args: argparse.Namespace) -> int:
    corpus = load_cases(task, args.corpus)
    cases = [c for c in corpus if args.split in ("all", c.split)]
    if not cases:
        raise AttestError(f"{args.corpus or task.corpus}: no cases in split {args.split!r}")
    cache_dir = resolve_cache_dir(args.cache_dir)
    cache = ResponseCache(cache_dir)
    try:
        backend = _backend(args)
        try:
            return _generate_and_score(task, args, corpus, cases, cache, backend)
        finally:
            backend.close()
    finally:
        cache.close()


def _generate_and_score(
    task: Task[Any],
    args: argparse.Namespace,
    corpus: list[Any],
    cases: list[Any],
    cache: ResponseCache,
    backend: Backend,
) -> int:
    identity = Identity.of(backend)
    run_id = new_run_id(task.name)
    run_dir = runs_dir(cache.directory) / run_id
    repeat = max(1, args.repeat)
    planned = plan(task, cases, identity, repeat)
    manifest = manifest_for(task, run_id, identity, corpus, args.split, repeat, planned, args.corpus)
    _write(run_dir / "manifest.json", manifest)
    concurrency = args.concurrency or DEFAULT_CONCURRENCY.get(backend.kind, 1)
    progress = stderr_progress(f"{task.name} {args.split}")
    try:
        stats = generate(
            task, planned, CachedChat(backend, cache, identity), concurrency=concurrency, progress=progress
        )
    except BackendError as exc:
        raise BackendError(f"{exc} (every answer received so far is cached: rerun to continue)", url=exc.url) from None
    _write(run_dir / "manifest.json", {**manifest, "status": "complete", "generate_seconds": stats.seconds})
    result = score_planned(task, ((p.case, p.sample, p.key) for p in planned), cache)
    report = _report(result, stats, run_id, manifest)
    _write(run_dir / "report.json", report)
    for warning in stats.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_report(result, stats, run_dir, manifest, worst=args.worst)
    return 0


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        write_json(path, data)
    except OSError as exc:
        raise AttestError(
            f"cannot write {path} ({exc.strerror or exc}): "
            "give a writable directory with --cache-dir or ATTEST_CACHE_DIR"
        ) from None


def _report(result: EvalResult, stats: GenerateStats, run_id: str, manifest: dict[str, Any]) -> dict[str, Any]:
    meta = {k: manifest[k] for k in ("task", "backend", "model", "digest", "split", "repeat", "corpus_sha256")}
    return {
        "run_id": run_id,
        **meta,
        "scored_at": time.time(),
        "generate": {"samples": stats.samples, "hits": stats.hits, "misses": stats.misses, "seconds": stats.seconds},
        **result.to_json(),
    }


def print_report(
    result: EvalResult, stats: GenerateStats | None, run_dir: Path, manifest: dict[str, Any], *, worst: int = 5
) -> None:
    """The human-readable report: score, worst cases, latency, cache, task metrics."""
    latency = f"{result.median_latency:.3f} s" if result.median_latency is not None else "n/a"
    print(
        f"{result.task} eval, {manifest['split']} split, {manifest['backend']} {manifest['model']} (run {run_dir.name})"
    )
    print(f"  mean score      {result.overall:.3f} over {result.n} samples")
    print(f"  median latency  {latency} (recorded at generation)")
    if stats is not None:
        print(f"  cache           {stats.hits} hits, {stats.misses} misses, {stats.seconds:.2f} s generating")
    for key, value in result.summary.items():
        print(f"  {key:<15} {_fmt(value)}")
    shown = [r for r in result.worst(worst) if r.score < 1.0]
    if shown:
        print("  worst cases:")
    for r in shown:
        print(f"    {r.score:.2f}  {r.id}#{r.sample}: {'; '.join(r.errors) or '(no errors)'}")
    print(f"  report          {run_dir / 'report.json'}")


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return "  ".join(f"{k}:{v}" for k, v in value.items()) or "(empty)"
    return str(value)
