"""Which runs a store holds, newest first, and what `TASK@latest` / `TASK@previous` name.

Shared by every command line that takes a run reference (`runs`, `compare`, `rescore`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from evals.store import run_index
from evals.store.records import DirStore, RunError, RunProgress
from evals.store.run_index import Summary

__all__ = ["RunRow", "list_runs", "resolve_ref"]


@dataclass(frozen=True)
class RunRow:
    run_id: str
    summary: Summary | None  # None: unreadable (another version, or edited by hand)
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.summary is None:
            return {"run_id": self.run_id, "status": "unreadable", "problem": self.problem}
        return self.summary.model_dump()


def list_runs(store: DirStore, task: str | None = None, *, clock: run_index.Clock = time.time_ns) -> list[RunRow]:
    """Every run in the store, newest first by creation time (ids have a second's resolution).

    A run whose files are unchanged since `runs/.index.json` summarised them is taken from
    there; any other is read and checked in full (and the index updated).
    """
    known, fresh, rows = run_index.load(store.root), {}, []
    for run_id in store.run_ids():
        stamp = run_index.stamp(store.root / run_id, clock)
        entry = known.get(run_id)
        try:
            summary = entry.summary if entry and stamp == entry.stamp else _summary(store, run_id)
        except RunError as exc:
            rows.append(RunRow(run_id, None, str(exc)))
            continue
        if stamp is not None:
            fresh[run_id] = run_index.Entry(stamp=stamp, summary=summary)
        if task is None or summary.task == task:
            rows.append(RunRow(run_id, _live(store, summary)))
    if fresh != known:
        run_index.save(store.root, fresh)
    return sorted(rows, key=_created, reverse=True)


def _live(store: DirStore, summary: Summary) -> Summary:
    """A `generating` run as it is now: `interrupted` when no process holds its lock (its writer was
    killed or stopped), else `generating k/n` from the progress its writer records."""
    if summary.status != "generating":
        return summary
    run_id = summary.run_id
    try:
        if not store.busy(run_id):
            return summary.model_copy(update={"status": "interrupted"})
        done = store.load(run_id, "progress", RunProgress) if store.exists(run_id, "progress") else None
    except RunError:
        return summary.model_copy(update={"status": "interrupted"})
    shown = f"{min(done.done, summary.samples)}/{summary.samples}" if done else f"0/{summary.samples}"
    return summary.model_copy(update={"status": f"generating {shown}"})


def _summary(store: DirStore, run_id: str) -> Summary:
    manifest = store.manifest(run_id)  # every record checked in full: a run that lists as readable is usable
    scored = store.report(run_id)
    return Summary.of(manifest, scored.overall if scored else None)


def _created(row: RunRow) -> tuple[float, str]:
    """When the run was made: its manifest's time, or (unreadable) the time its id starts with."""
    if row.summary is not None:
        return row.summary.created, row.run_id
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
    complete = [r.run_id for r in list_runs(store, task) if r.summary and r.summary.status == "complete"]
    index = 0 if which == "latest" else 1
    if len(complete) <= index:
        raise RunError(f"{ref!r}: {task} has {len(complete)} complete run(s) in {store.root}")
    return complete[index]
