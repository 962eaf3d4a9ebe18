"""`python -m evals.runs list | show | prune | gc`: what the runs in the cache measured.

- `list`: one row per run, newest first (id, task, status, backend, model, split, n,
  prompt fingerprint, score, age); `--task`, `--json`.
- `show RUN [--case ID]`: the run's provenance and system prompts, then per case the
  answer text from the cache, its score and the scorer's errors.
- `prune --incomplete | --older-than DAYS | --keep-last N`: removes run directories
  (a dry run unless `--yes`), never a run another process is writing.
- `gc`: removes cache entries that no remaining run references (dry run unless `--yes`).

RUN is a run id, or `TASK@latest` / `TASK@previous`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attest.errors import AttestError, run_reporting_errors
from attest.options import OneLineErrorParser
from attest.text import printable
from evals.cache import ResponseCache, resolve_cache_dir
from evals.records import DirStore, Manifest, ReportHead, RunError

__all__ = ["RunRow", "list_runs", "main", "resolve_ref"]


@dataclass(frozen=True)
class RunRow:
    run_id: str
    manifest: Manifest | None  # None: unreadable (another version, or edited by hand)
    score: float | None  # None: not scored
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        m = self.manifest
        if m is None:
            return {"run_id": self.run_id, "status": "unreadable", "problem": self.problem}
        return {
            "run_id": self.run_id,
            "task": m.task,
            "status": m.status,
            "backend": m.backend,
            "model": m.model,
            "split": m.split,
            "n": len({s.case for s in m.samples}),
            "samples": len(m.samples),
            "prompt": m.provenance.prompt_fingerprint,
            "score": self.score,
            "created": m.created,
            "label": m.label,
        }


def list_runs(store: DirStore, task: str | None = None) -> list[RunRow]:
    """Every run in the store, newest first by creation time (ids have a second's resolution)."""
    rows = []
    for run_id in store.run_ids():
        try:
            manifest = store.manifest(run_id)
            scored = store.load(run_id, "report", ReportHead) if store.exists(run_id, "report") else None
        except RunError as exc:
            rows.append(RunRow(run_id, None, None, str(exc)))
            continue
        if task is None or manifest.task == task:
            rows.append(RunRow(run_id, manifest, scored.overall if scored else None))
    return sorted(rows, key=_created, reverse=True)


def _created(row: RunRow) -> tuple[float, str]:
    """When the run was made: its manifest's time, or (unreadable) the time its id starts with."""
    if row.manifest is not None:
        return row.manifest.created, row.run_id
    try:
        return time.mktime(time.strptime(row.run_id[:15], "%Y%m%dT%H%M%S")), row.run_id
    except ValueError:
        return 0.0, row.run_id


def resolve_ref(store: DirStore, ref: str) -> str:
    """A run id from an id or `TASK@latest` / `TASK@previous` (complete runs only)."""
    if "@" not in ref:
        store.run_dir(ref)
        return ref
    task, _, which = ref.partition("@")
    if which not in ("latest", "previous"):
        raise RunError(f"{ref!r}: say TASK@latest or TASK@previous")
    complete = [r.run_id for r in list_runs(store, task) if r.manifest and r.manifest.status == "complete"]
    index = 0 if which == "latest" else 1
    if len(complete) <= index:
        raise RunError(f"{ref!r}: {task} has {len(complete)} complete run(s) in {store.root}")
    return complete[index]


def _age(created: float) -> str:
    seconds = max(0.0, time.time() - created)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def _list(store: DirStore, args: argparse.Namespace) -> int:
    rows = list_runs(store, args.task)
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=1))
        return 0
    print(
        f"{'run':<38} {'task':<12} {'status':<10} {'backend':<8} {'model':<20} {'split':<5} "
        f"{'n':>4} {'prompt':<12} {'score':>6} {'age':>5}"
    )
    for row in rows:
        d = row.to_json()
        if row.manifest is None:
            print(f"{row.run_id:<38} {'?':<12} unreadable: {printable(row.problem)}")
            continue
        score = "-" if d["score"] is None else f"{d['score']:.3f}"
        print(
            f"{row.run_id:<38} {d['task']:<12} {d['status']:<10} {d['backend']:<8} {printable(d['model'])[:20]:<20} "
            f"{d['split']:<5} {d['n']:>4} {d['prompt'][:12]:<12} {score:>6} {_age(d['created']):>5}"
        )
    return 0


def _show(store: DirStore, cache_dir: Any, args: argparse.Namespace) -> int:
    from evals.show import show_run

    run_id = resolve_ref(store, args.run)
    cache = ResponseCache(cache_dir)
    try:
        print(show_run(store, cache, run_id, case=args.case, as_json=args.json))
    finally:
        cache.close()
    return 0


def _doomed(store: DirStore, args: argparse.Namespace) -> list[RunRow]:
    rows = list_runs(store)
    doomed: list[RunRow] = []
    if args.incomplete:
        doomed += [r for r in rows if r.manifest is None or r.manifest.status != "complete"]
    if args.older_than is not None:
        cutoff = time.time() - args.older_than * 86400
        doomed += [r for r in rows if r.manifest is not None and r.manifest.created < cutoff]
    if args.keep_last is not None:
        kept: dict[str, int] = {}
        for r in rows:  # newest first
            if r.manifest is not None and r.manifest.status == "complete":
                kept[r.manifest.task] = kept.get(r.manifest.task, 0) + 1
                if kept[r.manifest.task] > args.keep_last:
                    doomed.append(r)
    return list({r.run_id: r for r in doomed}.values())


def _prune(store: DirStore, args: argparse.Namespace) -> int:
    if not (args.incomplete or args.older_than is not None or args.keep_last is not None):
        raise AttestError("say what to prune: --incomplete, --older-than DAYS or --keep-last N")
    removed = 0
    for row in _doomed(store, args):
        if not args.yes:
            busy = store.busy(row.run_id)
            print(f"keep   {row.run_id} (another process is writing it)" if busy else f"would remove {row.run_id}")
            continue
        removed += _remove(store, row.run_id)
    if not args.yes:
        print("dry run: nothing removed; add --yes to remove these")
    else:
        print(f"removed {removed} run(s)")
    return 0


def _remove(store: DirStore, run_id: str) -> int:
    """Remove a run holding its lock, so no writer can start on it meanwhile; 0 when another process writes it."""
    with store.claim(run_id) as mine:
        if not mine:
            print(f"keep   {run_id} (another process is writing it)")
            return 0
        print(f"remove {run_id}")
        try:
            shutil.rmtree(store.run_dir(run_id))
        except OSError as exc:
            raise RunError(f"cannot remove {store.run_dir(run_id)} ({exc.strerror or exc})") from None
    return 1


def _gc(store: DirStore, cache_dir: Any, args: argparse.Namespace) -> int:
    keep: set[str] = set()
    for row in list_runs(store):
        if row.manifest is None:
            raise AttestError(
                f"run {row.run_id} is unreadable, so its cache entries cannot be kept: "
                "prune it first (`runs prune --incomplete --yes`)"
            )
        keep.update(s.key for s in row.manifest.samples)
    cache = ResponseCache(cache_dir)
    try:
        count, size = cache.collect(keep, dry_run=not args.yes)
    finally:
        cache.close()
    verb = "removed" if args.yes else "would remove"
    print(f"{verb} {count} cache entries no run references ({size} bytes of answers)")
    if not args.yes:
        print("dry run: nothing removed; add --yes to remove them")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="runs", description="List, show and prune the runs in the cache.")
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    sub = parser.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="one row per run, newest first")
    ls.add_argument("--task", help="only this task's runs")
    ls.add_argument("--json", action="store_true", help="print JSON")
    show = sub.add_parser("show", help="a run's provenance, then each case's answer, score and errors")
    show.add_argument("run", help="a run id, or TASK@latest / TASK@previous")
    show.add_argument("--case", help="only this case id")
    show.add_argument("--json", action="store_true", help="print JSON")
    prune = sub.add_parser("prune", help="remove run directories (a dry run unless --yes)")
    prune.add_argument("--incomplete", action="store_true", help="runs that never completed (or are unreadable)")
    prune.add_argument("--older-than", type=_days, metavar="DAYS", help="runs created more than DAYS days ago")
    prune.add_argument("--keep-last", type=_keep, metavar="N", help="all but the newest N complete runs per task")
    prune.add_argument("--yes", action="store_true", help="remove them (default: only say what would go)")
    gc = sub.add_parser("gc", help="remove cache entries no remaining run references (a dry run unless --yes)")
    gc.add_argument("--yes", action="store_true", help="remove them (default: only count them)")
    return parser


def _days(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of days, 0 or more, not {text}")
    return value


def _keep(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_reporting_errors("runs", lambda: _dispatch(args))


def _dispatch(args: argparse.Namespace) -> int:
    cache_dir = resolve_cache_dir(args.cache_dir)
    store = DirStore(cache_dir / "runs")
    if args.command == "list":
        return _list(store, args)
    if args.command == "show":
        return _show(store, cache_dir, args)
    if args.command == "prune":
        return _prune(store, args)
    return _gc(store, cache_dir, args)


if __name__ == "__main__":
    raise SystemExit(main())
