"""The pipeline shared by the three tasks: plan, generate (cached), score, report.

A `Task` binds one task's case model, renderer, output schema and `score_one`; the
loop itself is written once here. Generation renders every case through the task's
production renderer, looks each sample up by its request key and calls the model
only on a miss. Scoring reads the cache and never the network.

Over 300 lines because the task binding, the planner, the cached chat, the generate
stage and the score stage are one data flow (Planned -> Entry -> CaseResult ->
EvalResult): split across modules, each would import the others' types.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from attest.answers import schema_of
from attest.backends.types import Backend, ChatResponse, Message
from attest.errors import AttestError
from evals.corpus.cases import AnyCase
from evals.corpus.read import read_cases, split_sha256
from evals.engine.bounded import run_bounded
from evals.store.keys import Entry, Identity, request_key, request_seed, this_worker
from evals.store.protocols import Answers

__all__ = [
    "AnswerCache",
    "CacheOnlyChat",
    "CachedChat",
    "CaseResult",
    "EvalResult",
    "GenerateStats",
    "MemoryCache",
    "MissingSampleError",
    "Planned",
    "SampleChat",
    "Task",
    "corpus_digests",
    "generate",
    "load_cases",
    "plan",
    "score_planned",
    "stderr_progress",
    "unsampled",
]

C = TypeVar("C", bound=AnyCase)
ScoreOne = Callable[[Any, str], dict[str, Any]]


class SampleChat(Protocol):
    """A chat call that also knows which sample of a repeated request it answers."""

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse: ...


class MissingSampleError(AttestError):
    """The score stage needed a sample that is not in the cache."""


@dataclass(frozen=True)
class Task(Generic[C]):
    """One task's bindings: everything in which the three tasks differ."""

    name: str
    case_model: type[C]
    output_model: type[BaseModel]
    corpus: Path
    render: Callable[[C], list[Message]]
    score_one: Callable[[C, str], dict[str, Any]]
    summarise: Callable[[Sequence[C], Sequence[dict[str, Any]]], dict[str, Any]] = lambda cases, results: {}

    @property
    def schema(self) -> dict[str, Any]:
        return schema_of(self.output_model)


def load_cases(task: Task[C], path: Path | None = None, split: str | None = None) -> list[C]:
    """The task's cases from `path` (default its corpus), all or one split."""
    cases = read_cases(path or task.corpus, task.case_model)
    if split in (None, "all"):
        return cases
    return [c for c in cases if c.split == split]


def corpus_digests(cases: Sequence[AnyCase]) -> dict[str, str]:
    """sha256 of each split's canonical content, as `make corpus-check` prints it."""
    return {s: split_sha256([c for c in cases if c.split == s]) for s in ("train", "dev")}


# --- planning and generation ----------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """One sample to have: a case, its sample index, the rendered request and its key."""

    case: AnyCase
    sample: int
    messages: list[Message]
    key: str


def plan(task: Task[C], cases: Sequence[C], identity: Identity, repeat: int) -> list[Planned]:
    """Render every case once through the production renderer and key each sample."""
    schema = task.schema
    planned: list[Planned] = []
    for case in cases:
        messages = task.render(case)
        planned.extend(Planned(case, i, messages, request_key(identity, messages, schema, i)) for i in range(repeat))
    return planned


@dataclass
class GenerateStats:
    """What a generate run did."""

    samples: int = 0
    hits: int = 0
    misses: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    workers: dict[str, int] = field(default_factory=dict)  # samples of this run each worker produced
    servers: dict[str, int] = field(default_factory=dict)  # ... and each model server


AnswerCache = Answers  # what the pipeline needs of a store: evals.store.protocols.Answers


class MemoryCache:
    """An AnswerCache in a dict: for in-process evaluation (`evaluate`) and tests."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.warnings: list[str] = []

    def get(self, key: str) -> Entry | None:
        return self.entries.get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, Entry | None]:
        return {key: self.entries.get(key) for key in keys}

    def put(self, key: str, entry: Entry) -> None:
        self.entries[key] = entry

    @contextmanager
    def lease(self, key: str, *, wait: bool = True) -> Iterator[bool | None]:
        yield key not in self.entries


class CachedChat:
    """A SampleChat that answers from the cache and asks the model only on a miss.

    `ask` is what a miss calls: a backend (through `from_backend`) or any SampleChat,
    such as a test's fake; the sample index is passed on, so repeats can be sampled.
    """

    def __init__(self, ask: SampleChat, cache: AnswerCache, identity: Identity, *, server: str = "") -> None:
        self.ask = ask
        self.cache = cache
        self.identity = identity
        self.calls = 0
        self.worker = this_worker()
        self.server = server  # the model server's URL without credentials, recorded with each answer

    @classmethod
    def from_backend(cls, backend: Backend, cache: AnswerCache, identity: Identity | None = None) -> CachedChat:
        server = getattr(backend, "host", None) or getattr(backend, "base_url", None) or getattr(backend, "kind", "")
        return cls(_backend_ask(backend), cache, identity or Identity.of(backend), server=str(server))

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        return self.fetch(request_key(self.identity, messages, schema, sample), messages, schema, sample)[0]

    def fetch(
        self, key: str, messages: Sequence[Message], schema: Mapping[str, Any], sample: int = 0
    ) -> tuple[Entry, bool]:
        """The entry for `key` and whether it was a hit; a miss calls the model and stores the answer."""
        found = self.try_fetch(key, messages, schema, sample, wait=True)
        assert found is not None  # waiting never yields "held"
        return found

    def try_fetch(
        self, key: str, messages: Sequence[Message], schema: Mapping[str, Any], sample: int = 0, *, wait: bool
    ) -> tuple[Entry, bool] | None:
        """`fetch`, or with `wait=False` None at once when another live run holds the sample's lease."""
        entry = self.cache.get(key)
        if entry is not None:
            return entry, True
        with self.cache.lease(key, wait=wait) as mine:
            if mine is None:
                return None
            if not mine:
                found = self.cache.get(key)
                if found is not None:
                    return found, True
            self.calls += 1
            response = self.ask(messages, schema, sample)
            who = {"worker": self.worker, "server": self.server}
            stored = response if isinstance(response, Entry) else Entry.of(response, **who)
            self.cache.put(key, stored)
            return stored, False


def _backend_ask(backend: Backend) -> SampleChat:
    """Each request is sent with `request_seed`: repeats of a case differ, and so do cases.

    Everything the seed is made of (the base seed in the options, the rendered request,
    the sample index) is in the key, so the seed each answer was drawn with is fixed by it.
    """

    def ask(messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        seed = request_seed(backend.options, messages, schema, sample)
        if seed is None:
            return backend.chat_json(messages, schema)
        return backend.chat_json(messages, schema, seed=seed)

    return ask


class CacheOnlyChat:
    """A SampleChat for the score stage: answers from the cache, raises on any miss."""

    def __init__(self, cache: AnswerCache, identity: Identity) -> None:
        self.cache = cache
        self.identity = identity

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        key = request_key(self.identity, messages, schema, sample)
        entry = self.cache.get(key)
        if entry is None:
            raise MissingSampleError(f"sample {key[:12]} is not in the cache: run the generate stage first")
        return entry


def unsampled(chat_json: Callable[[Sequence[Message], Mapping[str, Any]], ChatResponse]) -> SampleChat:
    """Adapt a plain chat_json (a backend, a fake) to a SampleChat; the sample index is ignored."""

    def call(messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        return chat_json(messages, schema)

    return call


Progress = Callable[[GenerateStats], None]


def generate(
    task: Task[Any],
    planned: Sequence[Planned],
    chat: CachedChat,
    *,
    concurrency: int = 1,
    progress: Progress | None = None,
) -> GenerateStats:
    """Fill the cache for every planned sample; at most `concurrency` model calls in flight.

    Hits are settled first, in order; misses go to a thread pool. A miss another live
    run (another worker on a shared store) holds is skipped and come back to after the
    rest, when its answer is read once the holder stored it. The first failed request
    stops the run (after the backend's own retries); everything answered before it is
    already in the cache, so a rerun asks only for what is missing.
    """
    stats = GenerateStats(samples=len(planned))
    start = time.perf_counter()
    schema = task.schema
    cached = chat.cache.get_many([p.key for p in planned])
    misses = [p for p in planned if cached[p.key] is None]
    stats.hits = len(planned) - len(misses)
    if progress:
        progress(stats)
    lock = threading.Lock()
    held: list[Planned] = []

    def attempt(p: Planned, wait: bool) -> None:
        got = chat.try_fetch(p.key, p.messages, schema, p.sample, wait=wait)
        with lock:
            if got is None:
                held.append(p)
                return
            stats.hits += got[1]
            stats.misses += not got[1]
            if progress:
                progress(stats)

    run_bounded(lambda p: attempt(p, False), misses, concurrency)
    order = {p.key: n for n, p in enumerate(misses)}
    run_bounded(lambda p: attempt(p, True), sorted(held, key=lambda p: order[p.key]), concurrency)
    _count_producers(stats, chat.cache, planned)
    stats.seconds = time.perf_counter() - start
    stats.warnings = list(chat.cache.warnings)
    return stats


def _count_producers(stats: GenerateStats, cache: AnswerCache, planned: Sequence[Planned]) -> None:
    """How many of the run's samples each worker and each model server produced (unknown: stored before)."""
    entries = [e for e in cache.get_many([p.key for p in planned]).values() if e is not None]
    stats.workers = dict(Counter(e.worker or "unknown" for e in entries).most_common())
    stats.servers = dict(Counter(e.server or "unknown" for e in entries).most_common())


# --- scoring ---------------------------------------------------------------------------


@dataclass
class CaseResult:
    """One sample's score and errors, plus what the scorer reported about it."""

    id: str
    sample: int
    score: float
    errors: list[str]
    latency_s: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvalResult:
    """A scored run: the mean score, the median generation latency, and every sample."""

    task: str
    overall: float
    median_latency: float | None
    results: list[CaseResult]
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.results)

    def worst(self, k: int = 5) -> list[CaseResult]:
        return sorted(self.results, key=lambda r: (r.score, r.id, r.sample))[:k]

    def by_case(self) -> dict[str, float]:
        """Mean score per case id (over its samples)."""
        scores: dict[str, list[float]] = {}
        for r in self.results:
            scores.setdefault(r.id, []).append(r.score)
        return {cid: sum(v) / len(v) for cid, v in scores.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "overall": self.overall,
            "n": self.n,
            "median_latency": self.median_latency,
            "summary": self.summary,
            "results": [asdict(r) for r in self.results],
        }


def _score_sample(task: Task[Any], case: AnyCase, sample: int, text: str, latency: float) -> CaseResult:
    scored = dict(task.score_one(case, text))
    cid, score, errors = scored.pop("id"), float(scored.pop("score")), list(scored.pop("errors"))
    return CaseResult(cid, sample, score, errors, latency, scored)


def _aggregate(task: Task[Any], cases: Sequence[AnyCase], results: list[CaseResult]) -> EvalResult:
    overall = sum(r.score for r in results) / len(results) if results else 0.0
    latencies = [r.latency_s for r in results]
    summary = task.summarise(cases, [{"id": r.id, "score": r.score, **r.details} for r in results])
    return EvalResult(task.name, overall, statistics.median(latencies) if latencies else None, results, summary)


def score_planned(task: Task[Any], samples: Iterable[tuple[AnyCase, int, str]], cache: AnswerCache) -> EvalResult:
    """The score stage for a run: each (case, sample, key) scored from the cache, no network."""
    samples = list(samples)
    entries = cache.get_many([key for _, _, key in samples])
    cases: dict[str, AnyCase] = {}
    results = []
    missing = []
    for case, sample, key in samples:
        entry = entries[key]
        if entry is None:
            missing.append(f"{case.id}#{sample}")
            continue
        cases[case.id] = case
        results.append(_score_sample(task, case, sample, entry.text, entry.latency_s))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise MissingSampleError(
            f"{len(missing)} sample(s) of this {task.name} run are not in the cache ({shown}): rerun its generate stage"
        )
    return _aggregate(task, list(cases.values()), results)


def stderr_progress(label: str) -> Progress:
    """A one-line progress display on stderr: done/total, hits, misses, rate."""
    tty = sys.stderr.isatty()
    state = {"last": 0.0}

    def show(stats: GenerateStats) -> None:
        done = stats.hits + stats.misses
        now = time.monotonic()
        if done < stats.samples and now - state["last"] < (0.2 if tty else 5.0):
            return
        state["last"] = now
        line = f"{label}: {done}/{stats.samples} samples (hits {stats.hits}, misses {stats.misses})"
        print(
            ("\r" + line) if tty else line,
            end="" if tty and done < stats.samples else "\n",
            file=sys.stderr,
            flush=True,
        )

    return show
