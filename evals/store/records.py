"""Run records: the typed manifest and report of a run, and the one place that reads and
writes `cache/runs/<id>/`.

A run directory holds `manifest.json` (what was asked: provenance and every sample's
cache key), `prompts.json` (the distinct system prompts the run sent, so a past run's
prompt can be read back after the code changed), `report.json` (the scored result) and,
beside an optimiser's candidate, `decision.json`. Every file is a strict typed record
(evals/store/models.py) with a `schema_version`; a hand-edited or foreign file is refused in one
line naming it.

Writes are atomic through a temporary file created exclusively, under an unpredictable
name, in the target directory (so a planted symlink is never followed), and a run id
given on a command line is an id, never a path. (Over 300 lines: the records and the one
store that reads, writes and locks them are kept together.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from attest.errors import AttestError
from attest.files import FileReadError, MiB, open_regular, read_bounded
from evals.store.models import (
    RUN_ID,
    Decision,
    Manifest,
    Record,
    RecordError,
    Report,
    RunAuthor,
    decode,
)
from evals.store.validation import VALIDATION_PREFIX

__all__ = [
    "DirStore",
    "MemoryStore",
    "RunError",
    "RunStore",
    "StoredSummary",
    "check_owner",
    "new_run_id",
    "record_cap",
    "write_atomic",
]

# Records are untrusted (a copied, planted or hand-edited run): each is size-capped before it is
# parsed, and then checked in full as its typed record (evals/store/models.py).
RECORD_BYTES = {"manifest": 32 * MiB, "report": 128 * MiB, "rescore": 128 * MiB, "prompts": 16 * MiB}
_OTHER_RECORD_BYTES = 1 * MiB  # decision.json, progress.json
_RUN_ID = RUN_ID
M = TypeVar("M", bound=Record)


class RunError(AttestError):
    """A run cannot be found, read or written."""


def new_run_id(task: str) -> str:
    """Sorts by time; unique across hosts, containers and processes without relying on a pid."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{task}-{os.urandom(4).hex()}"


def write_atomic(path: Path, text: str, *, make_parent: bool = True) -> None:
    """Write `text` to `path` so a crash leaves the old file or the new one, never half of one.

    The temporary file is created with O_EXCL under a random name in the target
    directory, so a symlink planted there in advance is never followed.
    """
    import tempfile  # here: the read-only command lines never write

    if make_parent:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would hide a run's pages from a web server or teammate
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@functools.cache
def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def _read(path: Path, model: type[M], limit: int = _OTHER_RECORD_BYTES) -> M:
    todo = "remove the run with `runs prune --incomplete --yes`"
    try:
        data = read_bounded(path, limit, todo=todo)
    except FileReadError as exc:
        raise RunError(str(exc)) from None
    try:
        return decode(data, model)
    except RecordError as exc:
        raise RunError(
            f"{path}: not a valid {model.kind} ({exc}); it was edited by hand or written by another version: {todo}"
        ) from None


def record_cap(name: str) -> int:
    """The most bytes a record called `name` may have before it is parsed."""
    return RECORD_BYTES.get(name, _OTHER_RECORD_BYTES)


def check_owner(run_id: str, name: str, record: Record, *, where: str = "") -> None:
    """A record names the run it belongs to: a run directory copied under another name (or a store row
    planted under another run's id, `where` naming the store) is refused, so it can never stand for (or
    overwrite the records of) the run whose id it holds."""
    recorded = getattr(record, "candidate_run" if isinstance(record, Decision) else "run_id", run_id)
    if recorded == run_id:
        return
    if where:
        raise RunError(f"run {run_id!r} in {where} is unreadable: its {name} records run id {recorded!r}")
    raise RunError(
        f"run {run_id!r}: its {name}.json records run id {recorded!r}: the directory was copied or renamed; "
        "remove it with `runs prune --incomplete --yes`"
    )


@dataclasses.dataclass(frozen=True)
class StoredSummary:
    """A run's summary row as a store keeps it (untrusted: `refs` decodes it). `summary` None: the run has
    records but no summary (written by an older attest): read its records. `stale`: generating, but its
    writer's heartbeat stopped. `done`: samples settled, as its writer last said."""

    run_id: str
    summary: str | None
    stale: bool = False
    done: int | None = None


class RunStore:
    """Where run records live (the `Runs` protocol's base). `DirStore` is `cache/runs/`; `MemoryStore` serves
    tests; `PgRuns` a team's store. `where` names it in messages (never a password)."""

    where = "the store"
    index_dir: Path | None = None  # where a summary index of the runs may be kept (`runs list` reads it first)

    # Whether a path a run recorded (its corpus) may be opened here: False for a shared store, whose runs
    # come from other machines; their corpus is then the local checkout's, compared by hash.
    paths_local = True

    def run_ids(self) -> list[str]:
        raise NotImplementedError

    def save(self, run_id: str, name: str, record: Record) -> None:
        raise NotImplementedError

    def load(self, run_id: str, name: str, model: type[M]) -> M:
        raise NotImplementedError

    def exists(self, run_id: str, name: str) -> bool:
        raise NotImplementedError

    @contextlib.contextmanager
    def writing(self, run_id: str) -> Iterator[None]:
        """Hold the run as being written: prune leaves it alone meanwhile."""
        yield

    def summaries(self, task: str | None, limit: int | None, offset: int) -> list[StoredSummary] | None:
        """`runs list`'s rows in one read, newest first, when the store keeps them (a shared store);
        None: read each run's records."""
        return None

    def load_runs(
        self, run_ids: list[str], models: Mapping[str, type[Record]]
    ) -> dict[str, list[tuple[str, Record]] | RunError]:
        """Each run's records (those of `models` it has), or why it is unreadable; a store may read them in
        one statement (a shared store)."""
        found: dict[str, list[tuple[str, Record]] | RunError] = {}
        for run_id in run_ids:
            try:
                found[run_id] = [(n, self.load(run_id, n, m)) for n, m in models.items() if self.exists(run_id, n)]
            except RunError as exc:
                found[run_id] = exc
        return found

    def manifest(self, run_id: str) -> Manifest:
        return self.load(run_id, "manifest", Manifest)

    def report(self, run_id: str) -> Report | None:
        return self.load(run_id, "report", Report) if self.exists(run_id, "report") else None

    def check_id(self, run_id: str) -> None:
        """Refuse what is not a plain run id, in one line."""
        if not _RUN_ID.fullmatch(run_id):
            raise RunError(f"{run_id!r} is not a run id (letters, digits, '.', '_', '-'): list them with `runs list`")

    def page_dir(self, run_id: str) -> Path | None:
        """Where the run's page is written as the run ends; None: on demand only (`runs show ID --html FILE`)."""
        return None

    def authors(self) -> Mapping[str, RunAuthor] | None:
        """Who made each run (a team's store); None when the store does not record it."""
        return None

    def busy(self, run_id: str) -> bool:
        """Whether another process is writing the run now."""
        return False

    def join_job(self, job: str, run_id: str) -> str | None:
        """None: this store's runs are one process's each (only a team's store shares a job's run)."""
        return None

    def leave_job(self, job: str) -> bool:
        return True

    def remove(self, run_id: str) -> bool:
        """Remove a run unless another process is writing it (then False)."""
        raise RunError(f"runs cannot be removed from {self.where}: prune the local cache (drop --store)")


class MemoryStore(RunStore):
    """Run records in a dict: for tests and for in-process evaluation."""

    where = "memory"

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], Record] = {}

    def run_ids(self) -> list[str]:
        return sorted({run_id for run_id, _ in self.records if not run_id.startswith(VALIDATION_PREFIX)})

    def save(self, run_id: str, name: str, record: Record) -> None:
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
        self.where = str(root)
        self.index_dir = root

    def page_dir(self, run_id: str) -> Path:
        return self.run_dir(run_id)

    def check_id(self, run_id: str) -> None:
        self.run_dir(run_id)

    def remove(self, run_id: str) -> bool:
        """Remove a run holding its lock, so no writer can start on it meanwhile; False when another writes it."""
        with self.claim(run_id) as mine:
            if not mine:
                return False
            try:
                shutil.rmtree(self.run_dir(run_id))
            except OSError as exc:
                raise RunError(f"cannot remove {self.run_dir(run_id)} ({exc.strerror or exc})") from None
        return True

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
        return [n for n in names if _RUN_ID.fullmatch(n) and not n.startswith(VALIDATION_PREFIX)]

    def save(self, run_id: str, name: str, record: Record) -> None:
        """Write one record of a run whose directory exists (`writing` creates it): a save never brings
        back a run that `runs prune` removed meanwhile."""
        path = self.run_dir(run_id) / f"{name}.json"
        try:
            write_atomic(path, record.to_json(indent=1), make_parent=False)
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
        record = _read(path, model, record_cap(name))
        check_owner(run_id, name, record)
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
