"""Which runs a store holds, newest first, and what `TASK@latest` / `TASK@previous` name.

Shared by every command line that takes a run reference (`runs`, `compare`, `rescore`).
A reference can be narrowed with `,KEY=VALUE` pairs after it, each matched exactly:
`reaction@latest,backend=local,model=llama3.2:1b,label=baseline` (keys: backend, model,
label, split, branch, commit (a prefix), subset). A reference passes over quick tries
(`--limit`, `--case`) unless `subset=limit|case|any` asks for them, and `resolve` says which
newer matching runs it passed over because they are not complete or ran a subset."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evals.store.local import run_index
from evals.store.local.run_index import Summary
from evals.store.models import RecordError, RunProgress, decode
from evals.store.protocols import Runs
from evals.store.records import RunError, StoredSummary

__all__ = [
    "FILTER_KEYS",
    "SUBSETS",
    "Resolved",
    "RunRow",
    "UnknownTaskRef",
    "list_runs",
    "parse_filter",
    "resolve",
    "resolve_ref",
]

FILTER_KEYS = ("backend", "model", "label", "split", "branch", "commit", "subset")


@dataclass(frozen=True)
class RunRow:
    run_id: str
    summary: Summary | None  # None: unreadable (another version, or edited by hand)
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.summary is None:
            return {"run_id": self.run_id, "status": "unreadable", "problem": self.problem}
        return self.summary.to_dict()


def list_runs(
    store: Runs,
    task: str | None = None,
    *,
    clock: run_index.Clock = time.time_ns,
    limit: int | None = None,
    offset: int = 0,
) -> list[RunRow]:
    """Every run in the store (or `limit` of them after `offset`), newest first by creation time.

    A run whose files are unchanged since `runs/.index.json` summarised them is taken from
    there; any other is read and checked in full (and the index updated). A shared store
    (PostgreSQL) keeps a summary row per run: one statement, each row checked as a Summary.
    """
    kept = store.summaries(task, limit, offset)
    if kept is not None:
        rows = [_kept(store, row) for row in kept]
        return [r for r in rows if task is None or r.summary is None or r.summary.task == task]
    root = store.index_dir
    if root is None:
        return _page(sorted(_read_all(store, task), key=_created, reverse=True), limit, offset)
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
    return _page(sorted(rows, key=_created, reverse=True), limit, offset)


def _page(rows: list[RunRow], limit: int | None, offset: int) -> list[RunRow]:
    return rows[offset : None if limit is None else offset + limit]


def _kept(store: Runs, row: StoredSummary) -> RunRow:
    """A store's summary row as a RunRow: checked in full (a row is untrusted), its run id against the key."""
    try:
        if row.summary is None:  # a run saved by an older attest: read from its records
            return RunRow(row.run_id, _summary(store, row.run_id))
        summary = decode(row.summary, Summary)
    except (RunError, RecordError) as exc:
        return RunRow(row.run_id, None, str(exc))
    if summary.run_id != row.run_id:
        return RunRow(row.run_id, None, f"its summary records run id {summary.run_id!r}")
    if summary.status == "generating":
        done = "0" if row.done is None else str(min(row.done, summary.samples))
        return RunRow(
            row.run_id, summary.replace(status="interrupted" if row.stale else f"generating {done}/{summary.samples}")
        )
    return RunRow(row.run_id, summary)


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
            rows.append(RunRow(run_id, _progress(store, summary)))
    return rows


def _progress(store: Runs, summary: Summary) -> Summary:
    """A shared store's `generating` run as `generating k/n`, from the progress its writer records."""
    if summary.status != "generating":
        return summary
    try:
        done = store.load(summary.run_id, "progress", RunProgress) if store.exists(summary.run_id, "progress") else None
    except RunError:
        done = None
    return summary.replace(status=f"generating {min(done.done, summary.samples) if done else 0}/{summary.samples}")


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
    """The run a reference names, and the newer matching runs passed over: not complete, or a quick try."""

    run_id: str
    skipped: tuple[str, ...] = ()  # "RUN_ID (status)" or "RUN_ID (--limit N)", newest first

    def note(self, ref: str) -> str:
        """One line for stderr, or "" when nothing was skipped."""
        if not self.skipped:
            return ""
        return (
            f"{ref}: skipped {len(self.skipped)} newer run(s) that are not complete or ran a subset "
            f"({', '.join(self.skipped)}); using {self.run_id}"
        )


class UnknownTaskRef(RunError):
    """A `TASK@...` reference to a task the store holds no run of (the caller may name the known tasks)."""

    def __init__(self, message: str, task: str) -> None:
        super().__init__(message)
        self.task = task


def parse_filter(text: str, where: str = "filter") -> dict[str, str]:
    """`backend=local,model=m` as {"backend": "local", "model": "m"}; an unknown key or no `=` is a RunError."""
    found: dict[str, str] = {}
    for item in filter(None, text.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in FILTER_KEYS:
            raise RunError(
                f"{where} {text!r}: expected KEY=VALUE pairs separated by commas, KEY one of {', '.join(FILTER_KEYS)}"
            )
        if key.strip() == "subset" and value not in SUBSETS:
            raise RunError(f"{where} {text!r}: subset= is one of {', '.join(SUBSETS)}")
        found[key.strip()] = value
    return found


def resolve(store: Runs, ref: str, where: Mapping[str, str] | None = None) -> Resolved:
    """The run an id or `TASK@latest[,KEY=VALUE...]` / `TASK@previous[...]` names.

    A reference picks complete runs of the whole split: runs of a quick try (`--limit`, `--case`) are
    passed over unless `subset=limit`, `subset=case` or `subset=any` asks for them. `where` narrows a
    `@` reference further (as the `,KEY=VALUE` pairs do); a plain run id takes no filter.
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
    every = [r for r in list_runs(store, task) if r.summary]
    place = store.where
    if not every:
        raise UnknownTaskRef(f"{ref!r}: no run of {task} in {place}", task)
    subset = wanted.pop("subset", "")
    rows = [r for r in every if r.summary and _matches(r.summary, wanted)]
    usable = [r.run_id for r in rows if r.summary and _usable(r.summary, subset)]
    index = 0 if which == "latest" else 1
    if len(usable) <= index:
        narrowed = "".join(f", {k}={v}" for k, v in {**wanted, **({"subset": subset} if subset else {})}.items())
        kind = "complete" if subset else "complete whole-split"
        raise RunError(f"{ref!r}: {task}{narrowed} has {len(usable)} {kind} run(s) in {place}")
    chosen = usable[index]
    newer = rows[: [r.run_id for r in rows].index(chosen)]
    skipped = tuple(f"{r.run_id} ({_why(r.summary)})" for r in newer if r.summary and r.run_id not in usable)
    return Resolved(chosen, skipped)


SUBSETS = ("limit", "case", "any")


def _usable(summary: Summary, subset: str) -> bool:
    """Complete, and of the whole split unless `subset` (limit, case, any) asks for a quick try."""
    if summary.status != "complete":
        return False
    return not summary.subset if not subset else subset == "any" or summary.subset == subset


def _why(summary: Summary) -> str:
    if summary.status != "complete":
        return summary.status
    return "--limit" if summary.subset == "limit" else "--case"


def _matches(summary: Summary, wanted: Mapping[str, str]) -> bool:
    """Each KEY=VALUE matched exactly; `commit=` matches a prefix of the commit."""
    return all(
        summary.commit.startswith(value) if key == "commit" else str(getattr(summary, key)) == value
        for key, value in wanted.items()
    )


def resolve_ref(store: Runs, ref: str) -> str:
    """A run id from an id or `TASK@latest` / `TASK@previous`, narrowed and passing over runs as `resolve` says."""
    return resolve(store, ref).run_id
