"""The run scripts' shared entry point: generate (cached), then score, then report.

`python evals/run_reaction_eval.py --backend local --split dev` and friends are
thin wrappers over `main(task, argv)`. `main` takes the backend factory, so tests
pass a fake instead of patching this module.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.types import Backend, BackendError
from attest.errors import AttestError, run_reporting_errors
from attest.options import OneLineErrorParser, add_backend_options, at_least, positive_seconds, settings_from_args
from evals.engine.execute import RunOutcome, RunSpec, execute
from evals.engine.pipeline import CachedChat, Task, load_cases, stderr_progress
from evals.render.report import annotate, print_report
from evals.store.keys import Identity
from evals.store.open import Opened, open_store
from evals.store.protocols import Runs
from evals.store.records import DirStore
from evals.store.settings import STORE_HELP, resolve_cache_dir, resolve_lease_wait, resolve_store_url

__all__ = ["BackendFactory", "main"]

DEFAULT_CONCURRENCY = {"openai": 4}
BackendFactory = Callable[[Settings], Backend]


def _unit_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or not 0.0 <= value <= 2.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 2, not {text}")
    return value


def _parser(task: Task[Any]) -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog=f"run_{task.name}_eval.py", description=f"Generate (cached) and score the {task.name} eval."
    )
    parser.add_argument("--split", choices=("train", "dev", "all"), default="dev", help="which cases (default dev)")
    parser.add_argument("--repeat", type=at_least(1), default=1, help="samples per case, 1 or more (default 1)")
    parser.add_argument(
        "--temperature", type=_unit_float, help="sampling temperature, 0-2 (default 0; in the cache key)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="base sampling seed (default 42); above temperature 0 each case and repeat gets its own seed from it",
    )
    parser.add_argument("--concurrency", type=at_least(1), help="model calls in flight (default: 1, or 4 for openai)")
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    parser.add_argument("--store", help=STORE_HELP)
    parser.add_argument(
        "--lease-wait",
        type=positive_seconds,
        help="seconds to wait for a sample another run is generating (env ATTEST_LEASE_WAIT; default 60)",
    )
    parser.add_argument("--corpus", type=Path, help=f"corpus file (default evals/{task.corpus.name})")
    parser.add_argument(
        "--offline", action="store_true", help="use the stub backend: no model, no network (same as --backend stub)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--worst", type=at_least(0), default=5, help="how many of the worst cases to show (default 5)")
    add_backend_options(parser, default_backend="auto")
    return parser


def main(task: Task[Any], argv: Sequence[str] | None = None, *, backend_factory: BackendFactory = make_backend) -> int:
    parser = _parser(task)
    args = parser.parse_args(argv)
    if args.offline and args.backend not in (None, "stub"):
        parser.error(f"--offline runs the stub backend; it contradicts --backend {args.backend}")
    try:
        return run_reporting_errors(f"{task.name} eval", lambda: _run(task, args, backend_factory))
    except KeyboardInterrupt:
        print(f"\n{task.name} eval: interrupted; every answer so far is cached, rerun to continue", file=sys.stderr)
        return 130


def settings_from(args: argparse.Namespace, *, default_backend: str = "auto") -> Settings:
    """The backend settings an eval entry point's options name."""
    kind = "stub" if getattr(args, "offline", False) else None
    settings = settings_from_args(args, default_backend=default_backend, backend=kind)
    options = dict(settings.options)
    if getattr(args, "temperature", None) is not None:
        options["temperature"] = args.temperature
    if getattr(args, "seed", None) is not None:
        options["seed"] = args.seed
    return dataclasses.replace(settings, options=options)


def _run(task: Task[Any], args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    corpus_path = args.corpus or task.corpus
    corpus = load_cases(task, corpus_path)
    cases = [c for c in corpus if args.split in ("all", c.split)]
    if not cases:
        raise AttestError(f"{corpus_path}: no cases in split {args.split!r}")
    cache_dir = resolve_cache_dir(args.cache_dir)
    store = open_store(resolve_store_url(args.store), cache_dir, lease_wait_s=resolve_lease_wait(args.lease_wait))
    try:
        backend = backend_factory(settings_from(args))
        try:
            spec = RunSpec(task, cases, corpus, corpus_path, args.split, args.repeat)
            outcome = _generate_and_score(spec, args, store, backend)
        finally:
            backend.close()
        _show(outcome, args, store.runs, store.answers.warnings)
    finally:
        store.close()
    return 0


def _generate_and_score(spec: RunSpec, args: argparse.Namespace, store: Opened, backend: Backend) -> RunOutcome:
    chat = CachedChat.from_backend(backend, store.answers, Identity.of(backend))
    concurrency = args.concurrency or DEFAULT_CONCURRENCY.get(backend.kind, 1)
    try:
        outcome = execute(
            spec, chat, store.runs, concurrency=concurrency, progress=stderr_progress(f"{spec.task.name} {spec.split}")
        )
    except BackendError as exc:
        raise BackendError(f"{exc} (every answer received so far is cached: rerun to continue)", url=exc.url) from None
    if store.shared:
        report = outcome.report.model_copy(update={"generate": {**outcome.report.generate, "store": store.where}})
        outcome = dataclasses.replace(outcome, report=report)
    return outcome


def _show(outcome: RunOutcome, args: argparse.Namespace, store: Runs, warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    outcome = annotate(outcome, store)
    store.save(outcome.run_id, "report", outcome.report)  # report.json carries what the table shows
    if args.json:
        print(json.dumps(outcome.report.model_dump(mode="json"), indent=1))
    else:
        where = store.run_dir(outcome.run_id) if isinstance(store, DirStore) else f"{getattr(store, 'where', '')}"
        print_report(outcome, where, worst=args.worst)
