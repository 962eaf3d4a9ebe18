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
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from evals.store.records import Manifest, write_atomic

__all__ = ["SETTLE_NS", "Clock", "Entry", "Summary", "load", "save", "stamp"]

SETTLE_NS = 2_000_000_000
_NAME = ".index.json"
_MAX_BYTES = 64 << 20
Clock = Callable[[], int]  # nanoseconds since the epoch, as time.time_ns


class Summary(BaseModel):
    """One row of `runs list`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    run_id: str
    task: str
    status: str
    backend: str
    model: str
    split: str
    n: int
    samples: int
    prompt: str
    score: float | None
    created: float
    label: str

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
        )


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    stamp: list[int]
    summary: Summary


class _Index(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    schema_version: Literal[1] = 1
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
        fd = os.open(root / _NAME, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except OSError:
        return {}
    if len(data) > _MAX_BYTES:
        return {}
    try:
        return dict(_Index.model_validate_json(data).entries)
    except ValidationError:
        return {}


def save(root: Path, entries: Mapping[str, Entry]) -> None:
    """Write the index atomically; a cache directory that cannot take it just goes without."""
    with contextlib.suppress(OSError):
        write_atomic(root / _NAME, _Index(entries=dict(entries)).model_dump_json(), make_parent=False)
