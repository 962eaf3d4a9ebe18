"""The pipeline shared by every task: plan, generate (cached), score.

A `Task` (evals/engine/task.py) binds one task's case model, renderer, output schema
and `score_one`; the loop itself is written once here. Generation renders every case
through the task's production renderer, looks each sample up by its request key and
calls the model only on a miss (evals/engine/chat.py). Scoring reads the cache and
never the network.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from attest.backends.types import Message
from evals.corpus.cases import Case
from evals.corpus.read import read_cases, split_sha256
from evals.engine.bounded import run_bounded
from evals.engine.chat import CachedChat, MissingSampleError
from evals.engine.claimed import generate_claimed
from evals.engine.task import Task
from evals.store.keys import Identity, request_key
from evals.store.protocols import Answers

__all__ = [
    "CaseResult",
    "EvalResult",
    "GenerateStats",
    "Planned",
    "corpus_digests",
    "generate",
    "load_cases",
    "plan",
    "score_planned",
]

C = TypeVar("C", bound=Case)


def load_cases(task: Task[C], path: Path | None = None, split: str | None = None) -> list[C]:
    """The task's cases from `path` (default its corpus), all or one split."""
    cases = read_cases(path or task.corpus, task.case_model)
    if split in (None, "all"):
        return cases
    return [c for c in cases if c.split == split]


def corpus_digests(cases: Sequence[Case]) -> dict[str, str]:
    """sha256 of each split's canonical content, as `make corpus-check` prints it."""
    return {s: split_sha256([c for c in cases if c.split == s]) for s in ("train", "dev")}


# --- planning and generation ----------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """One sample to have: a case, its sample index, the rendered request and its key."""

    case: Case
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
    # tokens the servers reported for the run's answers: "in", "out", what cache hits saved ("saved_in",
    # "saved_out") and how many answers reported none ("unreported")
    tokens: dict[str, int] = field(default_factory=dict)


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
    hit = {p.key for p in planned if cached[p.key] is not None}
    if progress:
        progress(stats)
    lock = threading.Lock()
    held: list[Planned] = []

    def count(key: str, was_hit: bool) -> None:
        with lock:
            stats.hits += was_hit
            stats.misses += not was_hit
            if was_hit:
                hit.add(key)
            if progress:
                progress(stats)

    def attempt(p: Planned, wait: bool) -> None:
        got = chat.try_fetch(p.key, p.messages, schema, p.sample, wait=wait)
        if got is None:
            with lock:
                held.append(p)
            return
        count(p.key, got[1])

    claims = chat.cache.batch_claims()
    if claims is not None:  # a team's store: claims in batches, never visiting what others hold
        generate_claimed(chat, claims, misses, schema, concurrency, count)
    else:
        run_bounded(lambda p: attempt(p, False), misses, concurrency)
        order = {p.key: n for n, p in enumerate(misses)}
        run_bounded(lambda p: attempt(p, True), sorted(held, key=lambda p: order[p.key]), concurrency)
    _count_producers(stats, chat.cache, planned, hit)
    stats.seconds = time.perf_counter() - start
    stats.warnings = list(chat.cache.warnings)
    return stats


def _count_producers(stats: GenerateStats, cache: Answers, planned: Sequence[Planned], hit: set[str]) -> None:
    """How many of the run's samples each worker and each model server produced (unknown: stored before),
    and the tokens the servers reported for them (`hit`: the keys the cache answered, whose tokens it saved)."""
    found = cache.get_many([p.key for p in planned])
    entries = [(p.key, e) for p in planned if (e := found.get(p.key)) is not None]
    stats.workers = dict(Counter(e.worker or "unknown" for _, e in entries).most_common())
    stats.servers = dict(Counter(e.server or "unknown" for _, e in entries).most_common())
    tokens = dict.fromkeys(("in", "out", "saved_in", "saved_out", "unreported"), 0)
    for key, e in entries:
        if e.prompt_tokens is None and e.completion_tokens is None:
            tokens["unreported"] += 1
        tokens["in"] += e.prompt_tokens or 0
        tokens["out"] += e.completion_tokens or 0
        if key in hit:
            tokens["saved_in"] += e.prompt_tokens or 0
            tokens["saved_out"] += e.completion_tokens or 0
    stats.tokens = tokens


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


_CORE = frozenset(("id", "score", "errors"))


def _score_sample(task: Task[Any], case: Case, sample: int, text: str, latency: float) -> CaseResult:
    scored = task.score_one(case, text)
    details = {k: v for k, v in scored.items() if k not in _CORE}  # the task's own typed keys
    return CaseResult(scored["id"], sample, float(scored["score"]), list(scored["errors"]), latency, details)


def _aggregate(task: Task[Any], cases: Sequence[Case], results: list[CaseResult]) -> EvalResult:
    overall = sum(r.score for r in results) / len(results) if results else 0.0
    latencies = [r.latency_s for r in results]
    summary = task.summarise(cases, [{"id": r.id, "score": r.score, **r.details} for r in results])
    return EvalResult(task.name, overall, statistics.median(latencies) if latencies else None, results, summary)


def score_planned(task: Task[Any], samples: Iterable[tuple[Case, int, str]], cache: Answers) -> EvalResult:
    """The score stage for a run: each (case, sample, key) scored from the cache, no network."""
    samples = list(samples)
    entries = cache.get_many([key for _, _, key in samples])
    cases: dict[str, Case] = {}
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
