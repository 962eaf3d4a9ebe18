"""The run scripts' shared entry point: generate (cached), then score, then report.

`python evals/run_reaction_eval.py --backend local --split dev` and friends are
thin wrappers over `main(task, argv)`. `main` takes the backend factory, so tests
pass a fake instead of patching this module. After the report, the run's page is
written beside its records (`cache/runs/<id>/report.html`; for a team's store, into the local
cache at `cache/pages/<id>/report.html`) and its path is the last line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attest.backends.registry import make_backend
from attest.backends.settings import Settings
from attest.backends.types import Backend, BackendError
from attest.errors import AttestError, run_reporting_errors
from attest.options import OneLineErrorParser, add_backend_options, at_least, positive_seconds, settings_from_args
from evals.analysis.annotate import annotate, degenerate_warnings, stub_answers
from evals.cli.options import add_judge_options, judge_settings, label_type
from evals.cli.prices import PRICES_HELP, load_prices
from evals.engine.chat import CachedChat
from evals.engine.execute import HelpedRun, RunOutcome, RunSpec, execute
from evals.engine.pipeline import load_cases
from evals.engine.progress import stderr_progress
from evals.engine.subset import named, stratified
from evals.engine.task import Task
from evals.render.judge_status import judge_line
from evals.render.page_run import Texts, answer_texts
from evals.render.report import print_report, write_run_page
from evals.store.keys import Identity
from evals.store.open import Opened, open_store
from evals.store.protocols import Runs
from evals.store.settings import (
    add_store_arguments,
    hint_options,
    resolve_cache_dir,
    resolve_lease_wait,
    resolve_store_retry,
    resolve_store_url,
)

__all__ = ["BackendFactory", "main"]

DEFAULT_CONCURRENCY = {"openai": 4}
BackendFactory = Callable[[Settings], Backend]


def _unit_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or not 0.0 <= value <= 2.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 2, not {text}")
    return value


def _parser(task: Task[Any], prog: str | None = None) -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog=prog or f"run_{task.name}_eval.py", description=f"Generate (cached) and score the {task.name} eval."
    )
    parser.add_argument("--split", choices=("train", "dev", "all"), default="dev", help="which cases (default dev)")
    parser.add_argument(
        "--limit",
        type=at_least(1),
        help="a quick try: N cases of the split, a fixed subset stratified by family (recorded in the run)",
    )
    parser.add_argument(
        "--case", action="append", default=[], metavar="ID", help="only this case (repeatable; recorded in the run)"
    )
    parser.add_argument(
        "--label",
        type=label_type,
        default="",
        metavar="NAME",
        help="a name for this run (baseline, candidate...): narrow refs with label=",
    )
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
    add_store_arguments(parser)
    parser.add_argument(
        "--lease-wait",
        type=positive_seconds,
        help="seconds to wait for a sample another run is generating (env ATTEST_LEASE_WAIT; default 60)",
    )
    parser.add_argument(
        "--store-retry",
        type=positive_seconds,
        help="seconds to keep reconnecting to a store whose connection was lost (env ATTEST_STORE_RETRY; default 60)",
    )
    parser.add_argument("--corpus", type=Path, help=f"corpus file (default evals/{task.corpus.name})")
    parser.add_argument(
        "--offline", action="store_true", help="use the stub backend: no model, no network (same as --backend stub)"
    )
    parser.add_argument("--prices", metavar="FILE", help=PRICES_HELP)
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--worst", type=at_least(0), default=5, help="how many of the worst cases to show (default 5)")
    add_backend_options(parser, default_backend="auto")
    add_judge_options(parser)
    return parser


def main(
    task: Task[Any],
    argv: Sequence[str] | None = None,
    *,
    backend_factory: BackendFactory = make_backend,
    prog: str | None = None,
) -> int:
    """Generate (cached) and score `task` as its options say; `prog` names the command in usage lines."""
    parser = _parser(task, prog)
    args = parser.parse_args(argv)
    if args.offline and args.backend not in (None, "stub"):
        parser.error(f"--offline runs the stub backend; it contradicts --backend {args.backend}")
    try:
        return run_reporting_errors(f"{task.name} eval", lambda: _run(task, args, backend_factory))
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, _exit_now)  # a second Ctrl-C while winding down ends the process at once
        print(
            f"\n{task.name} eval: interrupted (the run is recorded as interrupted); every answer so far is cached, "
            "rerun to continue",
            file=sys.stderr,
        )
        return 130


def _exit_now(signum: int, frame: object) -> None:
    os._exit(130)


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
    if args.case:
        cases = named(cases, args.case, f"the {args.split} split of {corpus_path}")
    if args.limit is not None:
        cases = stratified(cases, args.limit)
    args.price_list = load_prices(args.prices)  # before any model call: a bad price list costs nothing
    cache_dir = resolve_cache_dir(args.cache_dir)
    store = open_store(
        resolve_store_url(args.store, args.store_file),
        cache_dir,
        lease_wait_s=resolve_lease_wait(args.lease_wait),
        retry_s=resolve_store_retry(args.store_retry),
    )
    try:
        backend = backend_factory(dataclasses.replace(settings_from(args), stub_answer=task.stub_answer))
        judge = _judge_backend(task, args, backend_factory)
        try:
            only = tuple(dict.fromkeys(args.case))
            spec = RunSpec(
                task, cases, corpus, corpus_path, args.split, args.repeat, label=args.label, limit=args.limit, only=only
            )
            outcome = _generate_and_score(spec, args, store, backend, judge)
        except HelpedRun as helped:  # another worker of this job finishes the run: this one is done
            print(f"{task.name} eval: {helped}", file=sys.stderr if args.json else sys.stdout)
            return 0
        finally:
            backend.close()
            if judge is not None:
                judge.close()
        texts = answer_texts(store.answers, outcome.manifest.samples)  # for the degenerate-answer warnings and the page
        _show(outcome, args, store.runs, store.answers.warnings, texts)
    finally:
        store.close()
    return 0


def _judge_backend(task: Task[Any], args: argparse.Namespace, backend_factory: BackendFactory) -> Backend | None:
    """The judge's backend when --judge-backend (or ATTEST_JUDGE_BACKEND) names one."""
    settings = judge_settings(args)
    if settings is None:
        return None
    if task.judge is None:
        raise AttestError(f"--judge-backend: the {task.name} task has no judge stage; leave the option out")
    return backend_factory(dataclasses.replace(settings, stub_answer=task.judge.stub_answer))


def _generate_and_score(
    spec: RunSpec, args: argparse.Namespace, store: Opened, backend: Backend, judge: Backend | None = None
) -> RunOutcome:
    chat = CachedChat.from_backend(backend, store.answers, Identity.of(backend))
    judging = CachedChat.from_backend(judge, store.answers) if judge is not None else None
    concurrency = args.concurrency or _default_concurrency(backend)
    try:
        outcome = execute(
            spec,
            chat,
            store.runs,
            concurrency=concurrency,
            progress=stderr_progress(f"{spec.task.name} {spec.split}"),
            judge=judging,
        )
    except BackendError as exc:
        raise BackendError(f"{exc} (every answer received so far is cached: rerun to continue)", url=exc.url) from None
    if store.shared:
        report = outcome.report.replace(generate={**outcome.report.generate, "store": store.where})
        outcome = dataclasses.replace(outcome, report=report)
    return outcome


def _default_concurrency(backend: Backend) -> int:
    """4 for openai; for local, one request per slot of each of its servers; else 1."""
    lanes = getattr(backend, "lanes", None)
    if backend.kind == "local" and isinstance(lanes, int):
        return max(1, lanes)
    return DEFAULT_CONCURRENCY.get(backend.kind, 1)


def _show(outcome: RunOutcome, args: argparse.Namespace, store: Runs, warnings: Sequence[str], texts: Texts) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    stub = stub_answers(outcome)  # once, for the block's key and the degenerate-answer check
    outcome = annotate(outcome, store, stub=stub)
    store.save(outcome.run_id, "report", outcome.report)  # report.json carries what the table shows
    degenerate = degenerate_warnings(outcome, texts, stub=stub)
    hint = hint_options(args.cache_dir, args.store)
    page_dir = store.page_dir(outcome.run_id)
    if args.json:
        print(json.dumps(outcome.report.to_dict(), indent=1))
    else:
        shown = page_dir or store.where
        judged_by = judge_line(store, outcome.manifest)
        print_report(
            outcome,
            shown,
            worst=args.worst,
            degenerate=degenerate,
            hint=hint,
            prices=args.price_list,
            judged_by=judged_by,
        )
    # a team's store keeps records, not pages: its run's page goes into the local cache, as any run's does
    page_dir = page_dir or resolve_cache_dir(args.cache_dir) / "pages" / outcome.run_id
    try:
        page = write_run_page(outcome, store, page_dir, texts, degenerate, args.price_list)
    except (OSError, ValueError, ImportError) as exc:  # the report is saved: a page that fails loses nothing
        retry = f"`python -m evals.runs{hint} show {outcome.run_id} --html FILE` retries"
        print(f"warning: report.html not written ({exc}); {retry}", file=sys.stderr)
        return
    print(f"  page            {page}", file=sys.stderr if args.json else sys.stdout)
