"""Which runs a store holds, newest first, and what `TASK@latest` / `TASK@previous` name.

Shared by every command line that takes a run reference (`runs`, `compare`, `rescore`).
A reference can be narrowed with `,KEY=VALUE` pairs after it, each matched exactly:
`reaction@latest,backend=local,model=llama3.2:1b,label=baseline` (keys: backend, model,
label, split). `resolve` also says which newer matching runs it passed over because
they are not complete."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evals.store.local import run_index
from evals.store.local.run_index import Summary
from evals.store.models import RunProgress
from evals.store.protocols import Runs
from evals.store.records import RunError

__all__ = ["FILTER_KEYS", "Resolved", "RunRow", "list_runs", "parse_filter", "resolve", "resolve_ref"]

FILTER_KEYS = ("backend", "model", "label", "split")


@dataclass(frozen=True)
class RunRow:
    run_id: str
    summary: Summary | None  # None: unreadable (another version, or edited by hand)
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.summary is None:
            return {"run_id": self.run_id, "status": "unreadable", "problem": self.problem}
        return self.summary.to_dict()


def list_runs(store: Runs, task: str | None = None, *, clock: run_index.Clock = time.time_ns) -> list[RunRow]:
    """Every run in the store, newest first by creation time (ids have a second's resolution).

    A run whose files are unchanged since `runs/.index.json` summarised them is taken from
    there; any other is read and checked in full (and the index updated). A shared store
    (PostgreSQL) has no index: each run is read.
    """
    root = store.index_dir
    if root is None:
        return sorted(_read_all(store, task), key=_created, reverse=True)
    known, fresh, rows = run_index.load(root), {}, []
    for run_id in store.run_ids():
        stamp = run_index.stamp(root / run_id, clock)
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
        run_index.save(root, fresh)
    return sorted(rows, key=_created, reverse=True)


def _live(store: Runs, summary: Summary) -> Summary:
    """A `generating` run as it is now: `interrupted` when no process holds its lock (its writer was
    killed or stopped), else `generating k/n` from the progress its writer records."""
    if summary.status != "generating":
        return summary
    run_id = summary.run_id
    try:
        if not store.busy(run_id):
            return summary.replace(status="interrupted")
        done = store.load(run_id, "progress", RunProgress) if store.exists(run_id, "progress") else None
    except RunError:
        return summary.replace(status="interrupted")
    shown = f"{min(done.done, summary.samples)}/{summary.samples}" if done else f"0/{summary.samples}"
    return summary.replace(status=f"generating {shown}")


def _read_all(store: Runs, task: str | None) -> list[RunRow]:
    rows = []
    for run_id in store.run_ids():
        try:
            summary = _summary(store, run_id)
        except RunError as exc:
            rows.append(RunRow(run_id, None, str(exc)))
            continue
        if task is None or summary.task == task:
            rows.append(RunRow(run_id, summary))
    return rows


def _summary(store: Runs, run_id: str) -> Summary:
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


@dataclass(frozen=True)
class Resolved:
    """The run a reference names, and the newer matching runs passed over because they are not complete."""

    run_id: str
    skipped: tuple[str, ...] = ()  # "RUN_ID (status)", newest first

    def note(self, ref: str) -> str:
        """One line for stderr, or "" when nothing was skipped."""
        if not self.skipped:
            return ""
        return (
            f"{ref}: skipped {len(self.skipped)} newer run(s) that are not complete "
            f"({', '.join(self.skipped)}); using {self.run_id}"
        )


def parse_filter(text: str, where: str = "filter") -> dict[str, str]:
    """`backend=local,model=m` as {"backend": "local", "model": "m"}; an unknown key or no `=` is a RunError."""
    found: dict[str, str] = {}
    for item in filter(None, text.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in FILTER_KEYS:
            raise RunError(
                f"{where} {text!r}: expected KEY=VALUE pairs separated by commas, KEY one of {', '.join(FILTER_KEYS)}"
            )
        found[key.strip()] = value
    return found


def resolve(store: Runs, ref: str, where: Mapping[str, str] | None = None) -> Resolved:
    """The run an id or `TASK@latest[,KEY=VALUE...]` / `TASK@previous[...]` names (complete runs only).

    `where` narrows a `@` reference further (as the `,KEY=VALUE` pairs do); a plain run id
    takes no filter.
    """
    head, _, narrowing = ref.partition(",")
    wanted = {**parse_filter(narrowing, f"{ref!r}:"), **(where or {})}
    if "@" not in head:
        if wanted:
            raise RunError(f"{ref!r}: a run id names one run; narrow TASK@latest or TASK@previous instead")
        store.check_id(head)
        return Resolved(head)
    task, _, which = head.partition("@")
    if which not in ("latest", "previous"):
        raise RunError(f"{ref!r}: say TASK@latest or TASK@previous")
    rows = [r for r in list_runs(store, task) if r.summary and _matches(r.summary, wanted)]
    complete = [r.run_id for r in rows if r.summary and r.summary.status == "complete"]
    index = 0 if which == "latest" else 1
    if len(complete) <= index:
        narrowed = "".join(f", {k}={v}" for k, v in wanted.items())
        raise RunError(f"{ref!r}: {task}{narrowed} has {len(complete)} complete run(s) in {store.where}")
    chosen = complete[index]
    newer = rows[: [r.run_id for r in rows].index(chosen)]
    skipped = tuple(f"{r.run_id} ({r.summary.status})" for r in newer if r.summary and r.summary.status != "complete")
    return Resolved(chosen, skipped)


def _matches(summary: Summary, wanted: Mapping[str, str]) -> bool:
    return all(str(getattr(summary, key)) == value for key, value in wanted.items())


def resolve_ref(store: Runs, ref: str) -> str:
    """A run id from an id or `TASK@latest` / `TASK@previous` (complete runs only), narrowed as `resolve` says."""
    return resolve(store, ref).run_id
