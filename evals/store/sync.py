"""`runs push` / `runs pull`: copy answers and run records from one store to another.

Idempotent and resumable: an answer already in the target is skipped (answers are
written in batches, each one statement or transaction, so a killed copy leaves whole
batches behind and the next one carries on); a run record is copied when the target
lacks it or holds another version of it (a run that completed since the last push).
Answers go first, and a run's manifest last, so the target never lists a run whose
answers it lacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evals.store.keys import Entry
from evals.store.models import Record
from evals.store.open import Opened
from evals.store.protocols import Runs, batches
from evals.store.records import RunError

__all__ = ["Copied", "copy_answers", "copy_runs", "sync"]

Progress = Callable[[str], None]


class _Source(Protocol):
    def keys(self) -> Iterator[str]: ...

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]: ...


class _Target(Protocol):
    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]: ...

    def put(self, key: str, entry: Entry) -> None: ...


@dataclass
class Copied:
    copied: int = 0
    skipped: int = 0  # already in the target, the same
    unreadable: int = 0  # in the source but not readable there (another version, hand-edited, planted)
    conflicts: int = 0  # runs the target holds otherwise (pull never writes over them)
    lines: list[str] = field(default_factory=list)  # one line per unreadable run or conflict


def copy_answers(source: _Source, target: _Target, progress: Progress | None = None) -> Copied:
    """Every answer in `source` that `target` lacks, in batches of 500."""
    done = Copied()
    for batch in batches(source.keys()):
        there = target.get_many(batch)
        missing = [k for k in batch if there[k] is None]
        found = source.get_many(missing)
        items = [(k, e) for k, e in found.items() if e is not None]
        put_many = getattr(target, "put_many", None)
        if put_many is not None:
            put_many(items)
        else:
            for key, entry in items:
                target.put(key, entry)
        done.copied += len(items)
        done.skipped += len(batch) - len(missing)
        done.unreadable += len(missing) - len(items)
        if progress:
            progress(f"answers: {done.copied} copied, {done.skipped} already there")
    return done


def copy_runs(source: Runs, target: Runs, models: Mapping[str, type[Record]], *, overwrite: bool = True) -> Copied:
    """Every run record (`models`: record name -> its model, the manifest among them) the target lacks or
    differs in. With `overwrite=False` (pull) a run the target holds with any differing record is left as
    it is and named in `conflicts`: a copy never writes over a local run."""
    done = Copied()
    ordered = {n: models[n] for n in sorted(models, key=lambda n: n == "manifest")}  # the manifest last
    for batch in batches(iter(source.run_ids()), 100):
        for run_id, records in source.load_runs(batch, ordered).items():  # one statement per batch on a store
            if isinstance(records, RunError):
                done.unreadable += 1
                done.lines.append(f"unreadable run {run_id}: {records}")
                continue
            _copy_run(target, run_id, records, done, overwrite=overwrite)
    return done


def _copy_run(target: Runs, run_id: str, records: list[tuple[str, Record]], done: Copied, *, overwrite: bool) -> None:
    """One run's records into `target`: those it lacks or holds otherwise (never over a differing run unless
    `overwrite`)."""
    todo = [(n, r) for n, r in records if not (target.exists(run_id, n) and _same(target, run_id, n, r))]
    if not overwrite and any(target.exists(run_id, n) for n, _ in todo):
        done.conflicts += 1
        done.lines.append(f"conflict: run {run_id} differs from the local run of that id; left both as they are")
        return
    if not todo:
        done.skipped += 1  # counted in runs: skipped when the target held every record
        return
    with target.writing(run_id):
        for name, record in todo:
            target.save(run_id, name, record)
    done.copied += 1


def _same(target: Runs, run_id: str, name: str, record: Record) -> bool:
    try:
        return target.load(run_id, name, type(record)) == record
    except RunError:
        return False


def sync(command: str, local: Opened, shared: Opened, models: Mapping[str, type[Record]]) -> tuple[str, str]:
    """`push` (local -> shared) or `pull` (shared -> local), closing both: the line to print, and a warning or ""."""
    source, target = (local, shared) if command == "push" else (shared, local)
    try:
        answers = copy_answers(source.answers, target.answers)
        runs = copy_runs(source.runs, target.runs, models, overwrite=command == "push")
    finally:
        shared.close()
        local.close()
    verb = "pushed to" if command == "push" else "pulled from"
    line = (
        f"{verb} {shared.where}: {answers.copied} answers ({answers.skipped} already there), "
        f"{runs.copied} run(s) ({runs.skipped} already there)"
    )
    left = answers.unreadable + runs.unreadable
    said = [*source.answers.warnings, *runs.lines]
    notes = [*said[:20], *([f"{len(said) - 20} more not shown"] if len(said) > 20 else [])]
    if left:
        notes.append(f"{left} unreadable answers or runs were left behind (see `runs list`)")
    if runs.conflicts:
        notes.append(f"{runs.conflicts} run(s) in conflict were not copied")
    return line, "\n".join(notes)
