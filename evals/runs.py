"""`python -m evals.runs list | show | prune | gc`: what the runs in the cache measured.

- `list`: one row per run, newest first (id, task, status, backend, model, split, n,
  prompt fingerprint, score, age); `--task`, `--json`. Runs unchanged since the last
  listing come from `runs/.index.json` (evals/store/local/run_index.py), so 1,000 runs list at once.
- `trend TASK [--branch B] [--label L] [--limit N] [--html FILE]`: the task's score over its complete
  whole-split runs, oldest first, with what changed between them (evals/cli/trend.py).
- `show RUN [--case ID]`: the run's provenance and system prompts, then per case the
  answer text from the cache, its score and the scorer's errors; `--html FILE` writes the
  run's page instead (one offline HTML file, evals/render/html.py; `-` for stdout).
- `prune --incomplete | --subsets | --older-than DAYS | --keep-last N`: removes run directories
  (a dry run unless `--yes`), never a run another process is writing; `--keep-last` counts complete
  whole-split runs, so quick tries never push a baseline out (evals/cli/prune.py).
- `gc`: removes cache entries that no remaining run references (dry run unless `--yes`).

- `push` / `pull` (with `--store URL` or ATTEST_STORE): copy answers and run records from the
  local cache to a team's store, or back; idempotent and resumable (evals/store/sync.py).

With `--store URL` (or ATTEST_STORE), `list`, `show` read the team's store; `list` then
also shows who made each run (user@host, git commit). `prune` and `gc` act on the local cache.

RUN is a run id, or `TASK@latest` / `TASK@previous`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from attest.errors import AttestError, run_reporting_errors
from attest.options import OneLineErrorParser, at_least
from attest.text import printable
from evals.store.models import Decision, Manifest, Prompts, Report
from evals.store.open import open_store
from evals.store.protocols import Answers, Runs
from evals.store.records import RunError
from evals.store.refs import list_runs, resolve
from evals.store.settings import add_store_arguments, resolve_cache_dir, resolve_store_url
from evals.store.sync import sync

__all__ = ["main"]

CACHE_DIR_HELP = "cache and run directory (env ATTEST_CACHE_DIR; default cache/)"


def _age(created: float) -> str:
    seconds = max(0.0, time.time() - created)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


_COLUMNS = ("task", "status", "backend", "model", "split")


def _list(store: Runs, args: argparse.Namespace) -> int:
    rows = list_runs(store, _known_task(store, args.task), limit=args.limit, offset=args.offset)
    authors = store.authors()  # a team's store says who made each run; None elsewhere
    if args.json:
        by = {k: a.to_dict() for k, a in (authors or {}).items()}
        print(
            json.dumps(
                [{**r.to_json(), **({"by": by.get(r.run_id)} if authors is not None else {})} for r in rows], indent=1
            )
        )
        return 0
    shown = [{k: printable(str(v)) for k, v in r.to_json().items()} for r in rows if r.summary is not None]
    # columns as wide as their widest value: a model name is never cut (a hand-edited one is capped on read)
    width = {c: max([len(c), *(len(t[c]) for t in shown)]) for c in _COLUMNS}
    head = " ".join(f"{c:<{width[c]}}" for c in _COLUMNS)
    by_header = f" {'by':<24} {'commit':<8}" if authors is not None else ""
    print(f"{'run':<38} {head} {'n':>4} {'prompt':<12} {'score':>6} {'age':>5}{by_header}")
    for row in rows:
        if row.summary is None:
            print(f"{row.run_id:<38} unreadable: {printable(row.problem)}")
            continue
        d = row.to_json()
        t = {k: printable(str(v)) for k, v in d.items()}  # a hand-edited manifest may hold terminal escapes
        score = "-" if d["score"] is None else f"{d['score']:.3f}"
        cells = " ".join(f"{t[c]:<{width[c]}}" for c in _COLUMNS)
        print(
            f"{row.run_id:<38} {cells} {d['n']:>4} {t['prompt'][:12]:<12} {score:>6} {_age(d['created']):>5}"
            + (_author(authors.get(row.run_id)) if authors is not None else "")
        )
    return 0


def _trend(store: Runs, cache_dir: Any, args: argparse.Namespace) -> int:
    from evals.cli.trend import run_trend

    _known_task(store, args.task)
    return run_trend(store, cache_dir, args)


def _known_task(store: Runs, task: str | None) -> str | None:
    """`task` when it names a task; an unknown one is an error naming the known ones, not an empty table."""
    if task is None:
        return None
    from evals import tasks  # the task modules load only when a task is named

    if task not in tasks.names():
        raise AttestError(f"unknown task {task!r} (listing {store.where}): {tasks.known()}")
    return task


def _author(author: Any) -> str:
    if author is None:
        return f" {'?':<24} {'?':<8}"
    return f" {printable(f'{author.user}@{author.host}')[:24]:<24} {printable(author.git_commit or '-')[:8]:<8}"


def _sync(command: str, url: str | None, cache_dir: Any) -> int:
    """`push`: the local cache into the store; `pull`: the store into the local cache."""

    if url is None:
        raise AttestError(f"`runs {command}` needs a store: give --store URL or set ATTEST_STORE")
    models: dict[str, Any] = {
        "manifest": Manifest,
        "prompts": Prompts,
        "report": Report,
        "decision": Decision,
        "rescore": Report,
    }
    line, warning = sync(command, open_store(None, cache_dir), open_store(url, cache_dir), models)
    print(line)
    for note in warning.splitlines():
        print(f"warning: {note}", file=sys.stderr)
    return 0


def _show(url: str | None, cache_dir: Any, args: argparse.Namespace) -> int:
    from evals.render.show import show_run

    opened = open_store(url, cache_dir)
    store, cache = opened.runs, opened.answers
    try:
        if "@" in args.run:
            _known_task(store, args.run.partition("@")[0])
        found = resolve(store, args.run)
        if found.skipped:
            print(printable(f"runs: {found.note(args.run)}"), file=sys.stderr)
        run_id = found.run_id
        if args.html is not None:
            if args.case is not None:
                raise AttestError("--html writes the whole run's page; drop --case (the page filters by text)")
            return _show_html(store, cache, run_id, args.html)
        print(show_run(store, cache, run_id, case=args.case, as_json=args.json))
    finally:
        opened.close()
    return 0


def _show_html(store: Runs, cache: Answers, run_id: str, target: str) -> int:
    from evals.render.html import write_page
    from evals.render.pages import stored_run_html

    write_page(stored_run_html(store, cache, run_id, _stub_texts), target)
    if target != "-":
        print(f"page            {target}")
    return 0


def _stub_texts(manifest: Manifest, raw: Mapping[str, Mapping[str, Any]]) -> dict[str, str] | None:
    """The stub's answers on the run's cases, for the page's "identical to the stub's" check (None: unknown task)."""
    from evals import tasks
    from evals.analysis.stub_texts import stub_texts

    try:
        task = tasks.get(manifest.task)
        cases = [task.case_model.model_validate(c) for c in raw.values()]
    except (tasks.UnknownTaskError, ValueError):
        return None
    return stub_texts(task, cases)


def _gc(store: Runs, cache: Answers, args: argparse.Namespace) -> int:
    started = time.time()
    keep: set[str] = set()
    for run_id in store.run_ids():
        try:
            manifest = store.manifest(run_id)
        except RunError:
            raise AttestError(
                f"run {run_id} is unreadable, so its cache entries cannot be kept: "
                "prune it first (`runs prune --incomplete --yes`)"
            ) from None
        keep.update(s.key for s in manifest.samples)
        if manifest.judge is not None:  # a judged run's judgements are its records too
            keep.update(s.key for s in manifest.judge.samples if s.key)
    count, size = cache.collect(keep, before=started, dry_run=not args.yes)
    verb = "removed" if args.yes else "would remove"
    print(f"{verb} {count} cache entries no run references ({size} bytes of answers)")
    if not args.yes:
        print("dry run: nothing removed; add --yes to remove them")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="runs", description="List, show and prune the runs in the cache.")
    parser.add_argument("--cache-dir", help=CACHE_DIR_HELP)
    add_store_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="one row per run, newest first")
    ls.add_argument("--task", help="only this task's runs")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.add_argument("--limit", type=at_least(1), help="at most this many runs (the newest, after --offset)")
    ls.add_argument("--offset", type=at_least(0), default=0, help="skip this many of the newest runs first")
    show = sub.add_parser("show", help="a run's provenance, then each case's answer, score and errors")
    show.add_argument("run", help="a run id, or TASK@latest / TASK@previous")
    show.add_argument("--case", help="only this case id")
    shown = show.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print JSON")
    shown.add_argument(
        "--html", metavar="FILE", help="write the run's page (one offline HTML file) to FILE; - for stdout"
    )
    trend = sub.add_parser("trend", help="a task's score over its complete whole-split runs, oldest first")
    trend.add_argument("task", metavar="TASK", help="the task")
    trend.add_argument("--branch", help="only runs made on this git branch")
    trend.add_argument("--label", help="only runs with this label")
    trend.add_argument("--limit", type=at_least(1), metavar="N", help="only the newest N runs")
    trend.add_argument(
        "--html", metavar="FILE", help="also write the trend's page (one offline HTML file); - for stdout"
    )
    prune = sub.add_parser("prune", help="remove run directories (a dry run unless --yes)")
    prune.add_argument("--incomplete", action="store_true", help="runs that never completed (or are unreadable)")
    prune.add_argument("--older-than", type=_days, metavar="DAYS", help="runs created more than DAYS days ago")
    prune.add_argument("--subsets", action="store_true", help="quick tries: runs of --limit N or --case ID")
    prune.add_argument(
        "--keep-last",
        type=at_least(1),
        metavar="N",
        help="all but the newest N complete whole-split runs per task (quick tries go by --subsets)",
    )
    prune.add_argument("--yes", action="store_true", help="remove them (default: only say what would go)")
    gc = sub.add_parser("gc", help="remove cache entries no remaining run references (a dry run unless --yes)")
    gc.add_argument("--yes", action="store_true", help="remove them (default: only count them)")
    push = sub.add_parser("push", help="copy the local cache's answers and runs into the store (--store, ATTEST_STORE)")
    pull = sub.add_parser("pull", help="copy the store's answers and runs into the local cache")
    for command in (ls, show, trend, prune, gc, push, pull):  # the shared options before or after the subcommand
        command.add_argument("--cache-dir", default=argparse.SUPPRESS, help=CACHE_DIR_HELP)
        add_store_arguments(command, default=argparse.SUPPRESS)
    return parser


def _days(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of days, 0 or more, not {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_reporting_errors("runs", lambda: _dispatch(args))


def _dispatch(args: argparse.Namespace) -> int:
    cache_dir = resolve_cache_dir(args.cache_dir)
    url = resolve_store_url(args.store, args.store_file)
    if args.command in ("push", "pull"):
        return _sync(args.command, url, cache_dir)
    if url is None and not cache_dir.is_dir():
        raise AttestError(
            f"no cache directory {cache_dir}: run an eval first (nox -s eval-reaction), "
            "or give the cache with --cache-dir or ATTEST_CACHE_DIR"
        )
    if args.command == "show":
        return _show(url, cache_dir, args)
    opened = open_store(url, cache_dir, answers=args.command == "gc")  # list, trend and prune read the records
    try:
        if args.command == "list":
            return _list(opened.runs, args)
        if args.command == "trend":
            return _trend(opened.runs, cache_dir, args)
        if args.command == "prune":
            from evals.cli.prune import prune

            return prune(opened.runs, args)
        return _gc(opened.runs, opened.answers, args)
    finally:
        opened.close()


if __name__ == "__main__":
    raise SystemExit(main())
