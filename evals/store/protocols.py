"""The two things a store keeps, each behind one small protocol.

- `Answers`: model answers by request key, plus per-key leases (claims) so that no
  two runs ask the model for one sample. Local: `ResponseCache` (diskcache in
  `cache/responses/`); shared: `PgAnswers` (evals.store.postgres.answers); in memory:
  `MemoryCache` (evals.engine.chat).
- `Runs`: run records (manifest, prompts, report, decision, rescore) by run id.
  Local: `DirStore` (`cache/runs/`); shared: `PgRuns`; in memory: `MemoryStore`.

`evals.store.open.open_store` picks the pair from `--store` / `ATTEST_STORE`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, TypeVar

from attest.errors import AttestError
from evals.store.keys import Entry
from evals.store.models import Manifest, Record, Report, RunAuthor
from evals.store.records import RunError, StoredSummary

__all__ = ["Answers", "BatchClaims", "Runs", "WritesRefused"]

M = TypeVar("M", bound=Record)


class WritesRefused(AttestError):
    """The store may be read but not written (a read-only role). A command whose write is a by-product
    (rescore's record of itself) reports its results and says the write was skipped."""


class BatchClaims(Protocol):
    """Claims taken many keys at a time, in one statement (a team's store: `PgAnswers`)."""

    lease_wait_s: float
    where: str

    def claim_many(self, keys: Sequence[str], limit: int) -> tuple[list[str], set[str]]: ...

    def settle(self, key: str, *, stored: bool) -> None: ...

    def put_many(self, items: Sequence[tuple[str, Entry]]) -> int:
        """Store many answers in one statement (sent again after a reconnect); how many were new."""
        ...


class Answers(Protocol):
    """Answers by key, and leases on keys; `where` names the store in messages (never a password)."""

    warnings: list[str]

    @property
    def where(self) -> str: ...

    def get(self, key: str) -> Entry | None: ...

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]: ...

    def put(self, key: str, entry: Entry) -> None: ...

    def lease(self, key: str, *, wait: bool = True) -> AbstractContextManager[bool | None]:
        """Hold the right to generate `key`: yields True (generate it), False (another run stored it
        meanwhile: read it) or, with `wait=False`, None (another live run holds it now: come back later)."""
        ...

    def keys(self) -> Iterator[str]: ...

    def unlock(self) -> int:
        """Drop every lease, live or not (a stopped run's); how many there were."""
        ...

    def collect(self, keep: set[str], *, before: float, dry_run: bool = True) -> tuple[int, int]:
        """Remove (dry: count) answers not in `keep` stored before `before`: (entries, bytes of text)."""
        ...

    def close(self) -> None: ...

    def batch_claims(self) -> BatchClaims | None:
        """The store's claims in batches, when it has them (a team's store); None: one lease per key."""
        ...


class Runs(Protocol):
    """Run records by run id and record name, and what the commands ask of the place they live."""

    @property
    def where(self) -> str: ...

    @property
    def index_dir(self) -> Path | None:
        """Where a summary index of the runs may be kept (None: every listing reads each run)."""
        ...

    def run_ids(self) -> list[str]: ...

    def save(self, run_id: str, name: str, record: Record) -> None: ...

    def load(self, run_id: str, name: str, model: type[M]) -> M: ...

    def exists(self, run_id: str, name: str) -> bool: ...

    def writing(self, run_id: str) -> AbstractContextManager[None]: ...

    def manifest(self, run_id: str) -> Manifest: ...

    def report(self, run_id: str) -> Report | None: ...

    def check_id(self, run_id: str) -> None: ...

    def page_dir(self, run_id: str) -> Path | None: ...

    def authors(self) -> Mapping[str, RunAuthor] | None: ...

    def busy(self, run_id: str) -> bool: ...

    def remove(self, run_id: str) -> bool: ...

    # A shared store's: whether recorded paths may be opened here (False: another machine's), `runs list`'s
    # summary rows in one read (None: read each run), and many runs' records in one read (pull).
    @property
    def paths_local(self) -> bool: ...

    def summaries(self, task: str | None, limit: int | None, offset: int) -> list[StoredSummary] | None: ...

    def load_runs(
        self, run_ids: list[str], models: Mapping[str, type[Record]]
    ) -> dict[str, list[tuple[str, Record]] | RunError]: ...

    def join_job(self, job: str, run_id: str) -> str | None:
        """The run a live worker of `job` is generating, joined, else `run_id`; None: runs are not shared."""
        ...

    def leave_job(self, job: str) -> bool:
        """This worker is done generating `job`: whether it is the last live one (and so scores the run)."""
        ...


class Closing(Protocol):
    def close(self) -> None: ...


def batches(keys: Iterator[str], size: int = 500) -> Iterator[list[str]]:
    """`keys` in lists of at most `size`."""
    batch: list[str] = []
    for key in keys:
        batch.append(key)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
