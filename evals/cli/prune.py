"""`runs prune`: which runs go, and removing them (a dry run unless `--yes`), never a run another process writes.

- `--keep-last N`: all but the newest N complete whole-split runs of each task. A quick try
  (`--limit`, `--case`) neither counts towards N nor is removed by it: every warm rerun of a quick
  try would otherwise push the full baseline out.
- `--subsets`: every quick-try run; `--incomplete`: every run that is not complete (or is unreadable);
- `--older-than DAYS`: runs created before then.
"""

from __future__ import annotations

import argparse
import time

from attest.errors import AttestError
from evals.store.protocols import Runs
from evals.store.refs import RunRow, list_runs

__all__ = ["doomed", "prune"]


def doomed(store: Runs, args: argparse.Namespace) -> list[RunRow]:
    """The runs the options name, newest first, each once."""
    rows = list_runs(store)
    found: list[RunRow] = []
    if args.incomplete:
        found += [r for r in rows if r.summary is None or r.summary.status != "complete"]
    if args.subsets:
        found += [r for r in rows if r.summary is not None and r.summary.subset]
    if args.older_than is not None:
        cutoff = time.time() - args.older_than * 86400
        found += [r for r in rows if r.summary is not None and r.summary.created < cutoff]
    if args.keep_last is not None:
        kept: dict[str, int] = {}
        for r in rows:  # newest first
            if r.summary is not None and r.summary.status == "complete" and not r.summary.subset:
                kept[r.summary.task] = kept.get(r.summary.task, 0) + 1
                if kept[r.summary.task] > args.keep_last:
                    found.append(r)
    return list({r.run_id: r for r in found}.values())


def prune(store: Runs, args: argparse.Namespace) -> int:
    if not (args.incomplete or args.subsets or args.older_than is not None or args.keep_last is not None):
        raise AttestError("say what to prune: --incomplete, --subsets, --older-than DAYS or --keep-last N")
    rows = doomed(store, args)
    if not rows:
        print("nothing to prune")
        return 0
    removed = 0
    for row in rows:
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


def _remove(store: Runs, run_id: str) -> int:
    """Remove a run holding its lock, so no writer can start on it meanwhile; 0 when another process writes it."""
    if not store.remove(run_id):
        print(f"keep   {run_id} (another process is writing it)")
        return 0
    print(f"remove {run_id}")
    return 1
