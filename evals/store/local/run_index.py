"""A summary of each run kept beside the runs (`runs/.index.json`), so `runs list` over a
thousand runs reads one small file and a few stats per run, not every manifest and report.

An entry is used only while the run's manifest.json and report.json are the very files it
was made from (inode, size, modification and change times); anything else is read afresh
and checked in full, so a hand-edited manifest is still refused. A file changed in the last
two seconds is not indexed: timestamps that coarse cannot tell two quick writes apart. The
index is only a cache: unreadable, foreign or unwritable, it is ignored.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta

from attest.errors import AttestError
from attest.files import read_bounded
from evals.store.models import Manifest, Record, RecordError, decode
from evals.store.records import write_atomic

__all__ = ["SETTLE_NS", "Clock", "Entry", "Summary", "load", "save", "stamp", "subset_of"]

SETTLE_NS = 2_000_000_000
_NAME = ".index.json"
_MAX_BYTES = 64 << 20
Clock = Callable[[], int]  # nanoseconds since the epoch, as time.time_ns


_Text = Annotated[str, Meta(max_length=1000)]


class Summary(Record, frozen=True, kw_only=True):
    """One row of `runs list`."""

    run_id: str
    task: _Text
    status: Annotated[str, Meta(max_length=100)]
    backend: _Text
    model: _Text
    split: _Text
    n: Annotated[int, Meta(ge=0)]
    samples: Annotated[int, Meta(ge=0)]
    prompt: Annotated[str, Meta(max_length=128)]
    score: Annotated[float, Meta(ge=0.0, le=1.0)] | None
    created: Annotated[float, Meta(ge=0.0, le=1e11)]
    label: _Text
    subset: Annotated[str, Meta(max_length=20)] = ""  # "limit" (--limit N), "case" (--case ID), "" the whole split
    branch: _Text = ""
    commit: _Text = ""

    @classmethod
    def of(cls, manifest: Manifest, score: float | None) -> Summary:
        return cls(
            run_id=manifest.run_id,
            task=manifest.task,
            status=manifest.status,
            backend=manifest.backend,
            model=manifest.model,
            split=manifest.split,
            n=len({s.case for s in manifest.samples}),
            samples=len(manifest.samples),
            prompt=manifest.provenance.prompt_fingerprint,
            score=score,
            created=manifest.created,
            label=manifest.label,
            subset=subset_of(manifest),
            branch=manifest.provenance.git_branch or "",
            commit=manifest.provenance.git_commit or "",
        )


def subset_of(manifest: Manifest) -> str:
    """How a run is a quick try: "case" (--case ID), "limit" (--limit N), or "" when it ran its whole split."""
    return "case" if manifest.only else "limit" if manifest.limit is not None else ""


class Entry(Record, frozen=True, kw_only=True):
    stamp: list[int]
    summary: Summary


class _Index(Record, frozen=True, kw_only=True):
    schema_version: Literal[2] = 2  # 2: summaries say subset, branch, commit
    entries: dict[str, Entry]


def stamp(run_dir: Path, clock: Clock = time.time_ns) -> list[int] | None:
    """Who the run's manifest and report are on disk now; None when either is too fresh to tell apart."""
    now, found = clock(), []
    for name in ("manifest.json", "report.json"):
        try:
            st = os.stat(run_dir / name)
        except FileNotFoundError:
            found += [0, 0, 0, 0]
            continue
        except OSError:
            return None
        if now - max(st.st_mtime_ns, st.st_ctime_ns) < SETTLE_NS:
            return None
        found += [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return found


def load(root: Path) -> dict[str, Entry]:
    """The index of the runs under `root`, or nothing when it is missing, unreadable or foreign."""
    try:
        data = read_bounded(root / _NAME, _MAX_BYTES)  # a FIFO or device planted there is refused, not waited on
    except AttestError:
        return {}
    try:
        entries = decode(data, _Index).entries
    except RecordError:
        return {}
    return {run_id: e for run_id, e in entries.items() if e.summary.run_id == run_id}  # never another run's row


def save(root: Path, entries: Mapping[str, Entry]) -> None:
    """Write the index atomically; a cache directory that cannot take it just goes without."""
    with contextlib.suppress(OSError):
        write_atomic(root / _NAME, _Index(entries=dict(entries)).to_json(), make_parent=False)
