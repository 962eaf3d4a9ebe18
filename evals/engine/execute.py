"""The one loop every evaluation goes through: plan, record, generate, score, report.

The run scripts, the optimiser and in-process `evaluate()` all call `execute`; they
differ only in the cache (disk or memory), the run store (`cache/runs/` or memory)
and what answers a miss (a backend or a test's fake). So a decision taken in one can
be re-checked by another: every run is a record with the same provenance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from evals.corpus import paths
from evals.corpus.cases import Case
from evals.engine import provenance
from evals.engine.chat import CachedChat, MemoryCache, SampleChat
from evals.engine.judge import Judged, judge_run, judged_record
from evals.engine.pipeline import (
    CaseResult,
    EvalResult,
    GenerateStats,
    Planned,
    Progress,
    corpus_digests,
    generate,
    plan,
    score_planned,
)
from evals.engine.task import Task
from evals.store.keys import Identity, canonical_json
from evals.store.models import Manifest, Prompts, Provenance, Report, RunProgress, SampleRef
from evals.store.protocols import Runs
from evals.store.records import MemoryStore, new_run_id

__all__ = ["IN_PROCESS", "HelpedRun", "RunOutcome", "RunSpec", "evaluate", "execute", "report_of"]

C = TypeVar("C", bound=Case)
IN_PROCESS = Identity("in-process", "", "", {})


@dataclass(frozen=True)
class RunSpec:
    """What to run: a task's cases (one split) out of a corpus file, `repeat` samples each."""

    task: Task[Any]
    cases: Sequence[Case]
    corpus: Sequence[Case]
    corpus_path: Path
    split: str
    repeat: int = 1
    label: str = ""
    limit: int | None = None  # --limit N: a stratified subset of the split (engine/subset.py)
    only: tuple[str, ...] = ()  # --case ID...: just these cases


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    manifest: Manifest
    stats: GenerateStats
    result: EvalResult
    report: Report
    spec: RunSpec | None = None  # what was run: the report's baselines and families need its task and cases


def execute(
    spec: RunSpec,
    chat: CachedChat,
    store: Runs,
    *,
    concurrency: int = 1,
    progress: Progress | None = None,
    record_git: bool = True,
    judge: CachedChat | None = None,
) -> RunOutcome:
    """Plan every sample, record the run, fill the cache, score from it, and record the report.

    With a `judge` (the task must have a judge stage), every answer is then judged: the
    judgements are cached like answers, the manifest records the judge, the report gains
    its `judged` block beside the rule score. A run that fails is recorded `failed`, one
    stopped by Ctrl-C `interrupted`; every answer (and judgement) received before is in
    the cache, so rerunning asks only for what is missing.
    """
    planned = plan(spec.task, spec.cases, chat.identity, spec.repeat)
    manifest = _manifest(spec, new_run_id(spec.task.name), chat.identity, planned, record_git)
    job, run_id = _join(store, manifest)
    joined = run_id != manifest.run_id  # another worker of this job started the run: help it
    with store.writing(run_id):
        if not joined:
            store.save(run_id, "manifest", manifest)
            store.save(run_id, "prompts", Prompts(system=provenance.system_prompts([p.messages for p in planned])))
        recorded = _recording_progress(store, run_id, progress)
        judged: list[Judged] = []
        judge_stats: GenerateStats | None = None
        try:
            stats = generate(spec.task, planned, chat, concurrency=concurrency, progress=recorded)
            if judge is not None:
                ref, judged, judge_stats = judge_run(
                    spec.task, _samples(planned), chat.cache, judge, concurrency=concurrency
                )
                manifest = manifest.replace(judge=ref)
        except KeyboardInterrupt:
            if not joined:
                store.save(run_id, "manifest", manifest.replace(status="interrupted"))
            raise
        except Exception:
            if not joined:
                store.save(run_id, "manifest", manifest.replace(status="failed"))
            raise
        if job is not None and not store.leave_job(job):
            raise HelpedRun(run_id, store.where)
        if joined:
            manifest = store.manifest(run_id)
        manifest = manifest.replace(status="complete", generate_seconds=stats.seconds)
        result = score_planned(spec.task, _samples(planned), chat.cache)
        report = report_of(manifest, result, stats)
        if judge is not None and manifest.judge is not None:
            report = report.replace(judged=judged_record(manifest.judge, judged, judge_stats))
        store.save(run_id, "report", report)  # before `complete`: a complete run always has its report
        store.save(run_id, "manifest", manifest)
    return RunOutcome(run_id, manifest, stats, result, report, spec)


class HelpedRun(Exception):
    """This worker generated its share of a job's run; another, still generating, will score it."""

    def __init__(self, run_id: str, where: str) -> None:
        super().__init__(
            f"helped run {run_id}: the last of its workers to finish scores it and writes its report; "
            f"see it with `python -m evals.runs show {run_id}` on {where}"
        )
        self.run_id = run_id


def _join(store: Runs, manifest: Manifest) -> tuple[str | None, str]:
    """(the job's key, the run to record into): on a store whose workers share a job's run (`join_job`),
    the run a live worker of the same job started; else this run alone."""
    m = manifest
    what = [m.task, m.split, m.repeat, m.provenance.scorer_fingerprint, [s.key for s in m.samples]]
    job = hashlib.sha256(canonical_json(what).encode()).hexdigest()
    joined = store.join_job(job, manifest.run_id)
    return (None, manifest.run_id) if joined is None else (job, joined)


def _samples(planned: Sequence[Planned]) -> list[tuple[Case, int, str]]:
    return [(p.case, p.sample, p.key) for p in planned]


def _recording_progress(store: Runs, run_id: str, shown: Progress | None, every: float = 1.0) -> Progress:
    """`shown`, plus progress.json rewritten at most every `every` seconds (and at the end), so another
    process listing the runs sees k/n of this one while it generates."""
    last = [-every]

    def record(stats: GenerateStats) -> None:
        if shown is not None:
            shown(stats)
        done, now = stats.hits + stats.misses, time.monotonic()
        if now - last[0] >= every or done == stats.samples:
            last[0] = now
            store.save(
                run_id, "progress", RunProgress(run_id=run_id, done=done, total=stats.samples, updated=time.time())
            )

    return record


def _manifest(spec: RunSpec, run_id: str, identity: Identity, planned: Sequence[Planned], record_git: bool) -> Manifest:
    schema = spec.task.schema
    first = [p.messages for p in planned if p.sample == 0]
    commit, dirty = provenance.git_state() if record_git else (None, None)
    branch = provenance.git_branch() if record_git else None
    prompts = provenance.system_prompts(first)
    return Manifest(
        run_id=run_id,
        task=spec.task.name,
        created=time.time(),
        status="generating",
        backend=identity.kind,
        model=identity.model,
        digest=identity.digest,
        digest_note="" if identity.digest else "the server reported no model digest; the key holds an empty digest",
        options=dict(identity.options),
        split=spec.split,
        repeat=spec.repeat,
        label=spec.label,
        limit=spec.limit,
        only=list(spec.only),
        provenance=Provenance(
            prompt_fingerprint=provenance.prompt_fingerprint([(m, schema) for m in first]),
            system_prompts=list(prompts),
            **spec.task.provenance(),
            scorer_fingerprint=provenance.scorer_fingerprint(spec.task.score_one),
            git_commit=commit,
            git_dirty=dirty,
            git_branch=branch,
            attest_version=provenance.version(),
            corpus=paths.corpus_ref(spec.corpus_path),
            corpus_sha256=corpus_digests(spec.corpus),
        ),
        samples=[SampleRef(case=p.case.id, sample=p.sample, key=p.key) for p in planned],
        case_sha256={c.id: provenance.case_sha256(c) for c in spec.cases},
        request_sha256={
            p.case.id: provenance.prompt_fingerprint([(p.messages, schema)]) for p in planned if p.sample == 0
        },
    )


def report_of(manifest: Manifest, result: EvalResult, stats: GenerateStats | None) -> Report:
    """The report record of a scored run."""
    data = result.to_json()
    generate: dict[str, Any] = {}
    if stats is not None:
        generate = {"samples": stats.samples, "hits": stats.hits, "misses": stats.misses, "seconds": stats.seconds}
        generate.update(workers=stats.workers, servers=stats.servers, tokens=stats.tokens)
    return Report(
        run_id=manifest.run_id,
        task=manifest.task,
        backend=manifest.backend,
        model=manifest.model,
        digest=manifest.digest,
        split=manifest.split,
        repeat=manifest.repeat,
        scored_at=time.time(),
        scorer_fingerprint=manifest.provenance.scorer_fingerprint,
        corpus_sha256=manifest.provenance.corpus_sha256,
        overall=result.overall,
        n=result.n,
        median_latency=result.median_latency,
        summary=data["summary"],
        generate=generate,
        results=data["results"],
    )


def evaluate(
    task: Task[C],
    chat_json: SampleChat,
    cases: Sequence[C],
    *,
    repeat: int = 1,
    on_case: Callable[[CaseResult], None] | None = None,
    store: Runs | None = None,
) -> EvalResult:
    """Run `cases` through `chat_json` in process: the same loop as the run scripts, in memory."""
    spec = RunSpec(task, cases, cases, task.corpus, "all", repeat)
    chat = CachedChat(chat_json, MemoryCache(), IN_PROCESS)
    outcome = execute(spec, chat, store or MemoryStore(), record_git=False)
    if on_case is not None:
        for result in outcome.result.results:
            on_case(result)
    return outcome.result


def with_render(task: Task[C], render: Callable[[C], list[Any]]) -> Task[C]:
    """The task with another renderer (the optimiser's candidate prompt)."""
    return dataclasses.replace(task, render=render)
