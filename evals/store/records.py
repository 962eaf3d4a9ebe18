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
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from attest.errors import AttestError

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
    "RunStore",
    "SampleRef",
    "new_run_id",
    "write_atomic",
]

SCHEMA_VERSION = 1
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
M = TypeVar("M", bound=BaseModel)


class RunError(AttestError):
    """A run cannot be found, read or written."""


class _Record(BaseModel):
    # defer_build: validators are built on first use, so a command line pays only for the records it reads
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


class SampleRef(_Record):
    case: str
    sample: int
    key: str


class Provenance(_Record):
    """Enough to reproduce a run and to tell two runs apart."""

    prompt_fingerprint: str  # sha256 of every rendered request, in plan order
    system_prompts: list[str]  # sha256 of each distinct system prompt; texts in prompts.json
    tag_prompt_path: str | None = None  # ATTEST_TAG_PROMPT, when set
    tag_prompt_sha256: str | None = None
    scorer_fingerprint: str  # sha256 of the task's scorer source
    git_commit: str | None = None  # absent outside a git checkout
    git_dirty: bool | None = None
    attest_version: str
    corpus: str  # relative to the project root when inside it
    corpus_sha256: dict[str, str]  # per split


class Manifest(_Record):
    schema_version: Literal[1] = 1
    run_id: str
    task: str
    created: float
    status: Literal["generating", "complete", "failed", "interrupted"]
    backend: str
    model: str
    digest: str
    digest_note: str = ""
    options: dict[str, Any]
    split: str
    repeat: int = Field(ge=1)
    provenance: Provenance
    samples: list[SampleRef]
    case_sha256: dict[str, str] = Field(default_factory=dict)  # inputs and label of each case, for pairing runs
    generate_seconds: float | None = None
    label: str = ""  # free text: "baseline", "candidate", ...
    limit: int | None = None  # --limit N: a stratified subset of the split, not all of it
    only: list[str] = Field(default_factory=list)  # --case ID...: only these cases of the split


class Report(_Record):
    schema_version: Literal[1] = 1
    run_id: str
    task: str
    backend: str
    model: str
    digest: str
    split: str
    repeat: int
    scored_at: float
    scorer_fingerprint: str
    corpus_sha256: dict[str, str]
    overall: float
    n: int
    median_latency: float | None
    summary: dict[str, Any]
    generate: dict[str, Any] = Field(default_factory=dict)
    results: list[dict[str, Any]]
    # the interval, families, baselines and detectable difference (analysis/uncertainty.py); the run scripts fill it
    uncertainty: dict[str, Any] = Field(default_factory=dict)


class ReportHead(BaseModel):
    """What `runs list` reads of a report.json: its score, without building its per-case results
    (the whole report is checked where it is used: show, rescore, compare)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True, defer_build=True)
    kind: ClassVar[str] = "report"

    schema_version: Literal[1]
    run_id: str
    overall: float


class Decision(_Record):
    """The optimiser's gate, recorded beside the candidate run so rescore can re-check it."""

    schema_version: Literal[1] = 1
    baseline_run: str
    candidate_run: str
    margin: float
    verdict: Literal["ship", "regress", "inconclusive"]
    mean_difference: float
    interval: tuple[float, float]
    p_value: float
    n: int
    decided_at: float


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


def _read(path: Path, model: type[M]) -> M:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RunError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise RunError(f"{path}: not UTF-8 text (byte {exc.start}): remove the run with `runs prune`") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise RunError(
            f"{path}: not a valid {getattr(model, 'kind', model.__name__.lower())} (field {where}: {first['msg']}); "
            "it was edited by hand or written by another version: remove the run with `runs prune`"
        ) from None


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
        if not path.is_file():
            raise RunError(f"no run {run_id!r} in {self.root} (no {name}.json): list them with `runs list`")
        return _read(path, model)

    def exists(self, run_id: str, name: str) -> bool:
        return (self.run_dir(run_id) / f"{name}.json").is_file()

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
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise RunError(f"cannot lock {lock} ({exc.strerror or exc})") from None
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
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            except FileNotFoundError:
                continue  # the directory went between mkdir and open
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
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False
