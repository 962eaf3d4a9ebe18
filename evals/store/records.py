"""Run records: the typed manifest and report of a run, and the one place that reads and
writes `cache/runs/<id>/`.

A run directory holds `manifest.json` (what was asked: provenance and every sample's
cache key), `prompts.json` (the distinct system prompts the run sent, so a past run's
prompt can be read back after the code changed), `report.json` (the scored result) and,
beside an optimiser's candidate, `decision.json`. Every file is a strict pydantic model
with a `schema_version`; a hand-edited or foreign file is refused in one line naming it.

Writes are atomic through a temporary file created exclusively, under an unpredictable
name, in the target directory (so a planted symlink is never followed), and a run id
given on a command line is an id, never a path. (Over 300 lines: the records and the one
store that reads, writes and locks them are kept together.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from attest.errors import AttestError
from attest.files import FileReadError, MiB, open_regular, read_bounded

__all__ = [
    "SCHEMA_VERSION",
    "Decision",
    "DirStore",
    "Manifest",
    "MemoryStore",
    "Provenance",
    "Report",
    "ReportHead",
    "RunError",
    "RunProgress",
    "RunStore",
    "SampleRef",
    "new_run_id",
    "write_atomic",
]

SCHEMA_VERSION = 1
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
M = TypeVar("M", bound=BaseModel)
# Records are untrusted (a copied, planted or hand-edited run): each is size-capped before it is
# parsed, and every field has a type and a range, so a record that loads is one the commands can use.
RECORD_BYTES = {"manifest": 32 * MiB, "report": 128 * MiB, "rescore": 128 * MiB, "prompts": 16 * MiB}
_OTHER_RECORD_BYTES = 1 * MiB  # decision.json, progress.json
_Time = Annotated[float, Field(ge=0.0, le=1e11)]  # seconds since the epoch, before the year 5000
_Count = Annotated[int, Field(ge=0, le=10**9)]
_Name = Annotated[str, Field(max_length=1000)]
_Sha = Annotated[str, Field(max_length=128)]
_RunId = Annotated[str, Field(pattern=_RUN_ID.pattern)]


class RunError(AttestError):
    """A run cannot be found, read or written."""


class _Record(BaseModel):
    # defer_build: validators are built on first use, so a command line pays only for the records it reads
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True, allow_inf_nan=False)


class SampleRef(_Record):
    case: _Name
    sample: _Count
    key: _Sha


class ResultRow(_Record):
    """One entry of a report's `results` (pipeline.CaseResult as JSON); reports keep them as dicts."""

    id: _Name
    sample: _Count
    score: float = Field(ge=0.0, le=1.0)
    errors: list[str] = Field(default_factory=list)
    latency_s: float = Field(default=0.0, ge=0.0)
    details: dict[str, Any] = Field(default_factory=dict)


class Provenance(_Record):
    """Enough to reproduce a run and to tell two runs apart."""

    prompt_fingerprint: _Sha  # sha256 of every rendered request, in plan order
    system_prompts: list[_Sha]  # sha256 of each distinct system prompt; texts in prompts.json
    tag_prompt_path: str | None = None  # ATTEST_TAG_PROMPT, when set
    tag_prompt_sha256: _Sha | None = None
    scorer_fingerprint: _Sha  # sha256 of the task's scorer source
    git_commit: _Sha | None = None  # absent outside a git checkout
    git_dirty: bool | None = None
    attest_version: _Name
    corpus: str  # relative to the project root when inside it
    corpus_sha256: dict[_Name, _Sha]  # per split


class Manifest(_Record):
    schema_version: Literal[1] = 1
    run_id: _RunId
    task: _Name
    created: _Time
    status: Literal["generating", "complete", "failed", "interrupted"]
    backend: _Name
    model: _Name
    digest: _Name
    digest_note: _Name = ""
    options: dict[str, Any]
    split: _Name
    repeat: int = Field(ge=1, le=10**6)
    provenance: Provenance
    samples: list[SampleRef]
    case_sha256: dict[_Name, _Sha] = Field(default_factory=dict)  # inputs and label of each case, for pairing runs
    generate_seconds: float | None = Field(default=None, ge=0.0)
    label: _Name = ""  # free text: "baseline", "candidate", ...
    limit: int | None = Field(default=None, ge=1)  # --limit N: a stratified subset of the split, not all of it
    only: list[_Name] = Field(default_factory=list)  # --case ID...: only these cases of the split


class Report(_Record):
    schema_version: Literal[1] = 1
    run_id: _RunId
    task: _Name
    backend: _Name
    model: _Name
    digest: _Name
    split: _Name
    repeat: int = Field(ge=1, le=10**6)
    scored_at: _Time
    scorer_fingerprint: _Sha
    corpus_sha256: dict[_Name, _Sha]
    overall: float = Field(ge=0.0, le=1.0)
    n: _Count
    median_latency: float | None = Field(ge=0.0)
    summary: dict[str, Any]
    generate: dict[str, Any] = Field(default_factory=dict)
    results: list[dict[str, Any]]
    # the interval, families, baselines and detectable difference (analysis/uncertainty.py); the run scripts fill it
    uncertainty: dict[str, Any] = Field(default_factory=dict)

    @field_validator("results")
    @classmethod
    def _rows_typed(cls, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each row checked as a ResultRow (types and ranges), kept as the dict the renderers read."""
        for row in rows:
            ResultRow.model_validate(row)
        return rows


class ReportHead(BaseModel):
    """What `runs list` reads of a report.json: its score, without building its per-case results
    (the whole report is checked where it is used: show, rescore, compare)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True, defer_build=True)
    kind: ClassVar[str] = "report"

    schema_version: Literal[1]
    run_id: _RunId
    overall: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)


class Decision(_Record):
    """The optimiser's gate, recorded beside the candidate run so rescore can re-check it."""

    schema_version: Literal[1] = 1
    baseline_run: _RunId
    candidate_run: _RunId
    margin: float = Field(ge=0.0, lt=1.0)
    verdict: Literal["ship", "regress", "inconclusive"]
    mean_difference: float = Field(ge=-1.0, le=1.0)
    interval: tuple[float, float]
    p_value: float = Field(ge=0.0, le=1.0)
    n: _Count
    decided_at: _Time


class RunProgress(_Record):
    """progress.json: how many of a generating run's samples are settled, rewritten by its writer about
    once a second, so `runs list` shows a live run as k/n (and one whose writer is gone as interrupted)."""

    schema_version: Literal[1] = 1
    run_id: _RunId
    done: _Count
    total: _Count
    updated: _Time


def new_run_id(task: str) -> str:
    """Sorts by time; unique across hosts, containers and processes without relying on a pid."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{task}-{secrets.token_hex(4)}"


def write_atomic(path: Path, text: str, *, make_parent: bool = True) -> None:
    """Write `text` to `path` so a crash leaves the old file or the new one, never half of one.

    The temporary file is created with O_EXCL under a random name in the target
    directory, so a symlink planted there in advance is never followed.
    """
    if make_parent:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read(path: Path, model: type[M], limit: int = _OTHER_RECORD_BYTES) -> M:
    todo = "remove the run with `runs prune --incomplete --yes`"
    try:
        data = read_bounded(path, limit, todo=todo)
    except FileReadError as exc:
        raise RunError(str(exc)) from None
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise RunError(
            f"{path}: not a valid {getattr(model, 'kind', model.__name__.lower())} (field {where}: {first['msg']}); "
            f"it was edited by hand or written by another version: {todo}"
        ) from None


def _check_owner(run_id: str, name: str, record: BaseModel) -> None:
    """A record names the run it belongs to: a run directory copied under another name is refused,
    so it can never stand for (or overwrite the records of) the run whose id it holds."""
    recorded = getattr(record, "candidate_run" if isinstance(record, Decision) else "run_id", run_id)
    if recorded != run_id:
        raise RunError(
            f"run {run_id!r}: its {name}.json records run id {recorded!r}: the directory was copied or renamed; "
            "remove it with `runs prune --incomplete --yes`"
        )


class RunStore:
    """Where run records live. `DirStore` is `cache/runs/`; `MemoryStore` serves tests."""

    def run_ids(self) -> list[str]:
        raise NotImplementedError

    def save(self, run_id: str, name: str, record: BaseModel) -> None:
        raise NotImplementedError

    def load(self, run_id: str, name: str, model: type[M]) -> M:
        raise NotImplementedError

    def exists(self, run_id: str, name: str) -> bool:
        raise NotImplementedError

    @contextlib.contextmanager
    def writing(self, run_id: str) -> Iterator[None]:
        """Hold the run as being written: prune leaves it alone meanwhile."""
        yield

    def manifest(self, run_id: str) -> Manifest:
        return self.load(run_id, "manifest", Manifest)

    def report(self, run_id: str) -> Report | None:
        return self.load(run_id, "report", Report) if self.exists(run_id, "report") else None


class MemoryStore(RunStore):
    """Run records in a dict: for tests and for in-process evaluation."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], BaseModel] = {}

    def run_ids(self) -> list[str]:
        return sorted({run_id for run_id, _ in self.records})

    def save(self, run_id: str, name: str, record: BaseModel) -> None:
        self.records[run_id, name] = record

    def load(self, run_id: str, name: str, model: type[M]) -> M:
        record = self.records.get((run_id, name))
        if not isinstance(record, model):
            raise RunError(f"no {name} for run {run_id!r}")
        return record

    def exists(self, run_id: str, name: str) -> bool:
        return (run_id, name) in self.records


class DirStore(RunStore):
    """`<cache>/runs/<id>/<name>.json`, each write atomic; ids are checked to stay inside."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run_dir(self, run_id: str) -> Path:
        """The directory of `run_id`, refusing anything that is not a plain id inside the root."""
        if not _RUN_ID.fullmatch(run_id):
            raise RunError(f"{run_id!r} is not a run id (letters, digits, '.', '_', '-'): list them with `runs list`")
        path = self.root / run_id  # one plain name (the pattern allows no '/' and no leading '.')
        if path.is_symlink():
            raise RunError(f"run {run_id!r} resolves outside {self.root}: refusing to use it")
        return path

    def run_ids(self) -> list[str]:
        try:
            names = sorted(entry.name for entry in os.scandir(self.root) if entry.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise RunError(
                f"cannot list the runs in {self.root} ({exc.strerror or exc}): "
                "give a cache directory with --cache-dir or ATTEST_CACHE_DIR"
            ) from None
        return [n for n in names if _RUN_ID.fullmatch(n)]

    def save(self, run_id: str, name: str, record: BaseModel) -> None:
        """Write one record of a run whose directory exists (`writing` creates it): a save never brings
        back a run that `runs prune` removed meanwhile."""
        path = self.run_dir(run_id) / f"{name}.json"
        try:
            write_atomic(path, record.model_dump_json(indent=1), make_parent=False)
        except FileNotFoundError:
            raise RunError(f"run {run_id!r} no longer exists in {self.root} (removed by `runs prune`?)") from None
        except OSError as exc:
            raise RunError(
                f"cannot write {path} ({exc.strerror or exc}): "
                "give a writable directory with --cache-dir or ATTEST_CACHE_DIR"
            ) from None

    def load(self, run_id: str, name: str, model: type[M]) -> M:
        path = self.run_dir(run_id) / f"{name}.json"
        if not path.exists():
            raise RunError(f"no run {run_id!r} in {self.root} (no {name}.json): list them with `runs list`")
        record = _read(path, model, RECORD_BYTES.get(name, _OTHER_RECORD_BYTES))
        _check_owner(run_id, name, record)
        return record

    def exists(self, run_id: str, name: str) -> bool:
        return (self.run_dir(run_id) / f"{name}.json").exists()  # a FIFO or directory there: `load` refuses it

    @contextlib.contextmanager
    def writing(self, run_id: str) -> Iterator[None]:
        """An exclusive OS lock on the run's `.lock` (creating the run's directory), released when this
        process ends however it ends."""
        fd = self._lock_live(self.run_dir(run_id))
        try:
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def claim(self, run_id: str) -> Iterator[bool]:
        """Take the run's lock without waiting: True while this process holds it (and may remove the
        run), False when another process is writing it."""
        lock = self.run_dir(run_id) / ".lock"
        fd = _open_lock(lock)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    @staticmethod
    def _lock_live(run_dir: Path) -> int:
        """An fd holding the flock of `run_dir/.lock` as it is on disk now: a lock file that `runs prune`
        removed while this process waited on it is let go and taken afresh."""
        lock = run_dir / ".lock"
        for _ in range(100):
            run_dir.mkdir(parents=True, exist_ok=True)
            if not run_dir.is_dir():
                continue  # the directory went after mkdir
            try:
                fd = _open_lock(lock)
            except RunError:
                if not run_dir.is_dir():
                    continue  # the directory went between mkdir and open
                raise
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)
        raise RunError(f"cannot lock {lock}: it is removed again each time (is `runs prune` running in a loop?)")

    def busy(self, run_id: str) -> bool:
        """Whether another process holds the run's lock (is writing it now)."""
        lock = self.run_dir(run_id) / ".lock"
        if not lock.exists():
            return False
        fd = _open_lock(lock, os.O_RDONLY | os.O_NOFOLLOW)  # read-only: a cache another user owns can be listed
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False


def _open_lock(lock: Path, flags: int = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW) -> int:
    """An fd on a run's `.lock` (created if missing, by default); a FIFO, device or symlink planted there is
    refused in one line instead of hanging the open."""
    try:
        return open_regular(lock, flags, 0o600, todo="remove that file")
    except FileReadError as exc:
        raise RunError(f"cannot lock the run: {exc}") from None
