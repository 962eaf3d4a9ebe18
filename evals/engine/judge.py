"""The judge stage: a second generation stage that grades each cached answer pass or fail.

A task's judge (`Task.judge`, a `JudgeSpec`) renders one judge request per sample from
the case and the sample's cached answer; the request goes through the same `CachedChat`,
cache and team store as answers, keyed by `request_key` on the judge's identity (backend,
model, digest, options), the rendered judge messages, the judge schema and the sample
index. Every judgement's key is recorded in the run's manifest (`JudgeRef.samples`), so a
judged run is re-scored from the cache alone, like its answers. A judge answer that is not
valid for the schema counts as fail with the reason UNPARSEABLE and is counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from attest.backends.types import Message
from evals.corpus.cases import Case
from evals.engine import provenance
from evals.engine.chat import CachedChat, MissingSampleError
from evals.engine.pipeline import GenerateStats, Planned, Progress, generate
from evals.engine.scoring import parse_or_error
from evals.engine.task import JudgeSpec, Task
from evals.store.keys import Identity, request_key
from evals.store.models import JudgeRef, JudgeSample, Manifest
from evals.store.protocols import Answers

__all__ = [
    "NOTHING_TO_JUDGE",
    "UNPARSEABLE",
    "Judged",
    "judge_fingerprint",
    "judge_ref",
    "judge_run",
    "judged_from_cache",
    "judged_record",
    "known_judge",
    "parse_judgement",
]

UNPARSEABLE = "unparseable judgement"
NOTHING_TO_JUDGE = "the answer does not parse: nothing to judge"


@dataclass(frozen=True)
class Judged:
    """One sample's judgement."""

    id: str
    sample: int
    passed: bool
    reason: str
    unparseable: bool = False


def judge_fingerprint(spec: JudgeSpec[Any]) -> str:
    """sha256 of the judge prompt rendered on fixed placeholders, with its schema: the judge prompt's name."""
    return provenance.prompt_fingerprint([(spec.probe(), spec.schema)])


def parse_judgement(spec: JudgeSpec[Any], text: str) -> tuple[bool, str, bool]:
    """(passed, reason, unparseable): an answer invalid for the judge schema is a fail, UNPARSEABLE."""
    parsed, _ = parse_or_error(text, spec.output_model)
    if parsed is None:
        return False, UNPARSEABLE, True
    return getattr(parsed, "grade", None) == "pass", str(getattr(parsed, "reason", "")), False


def judge_run(
    task: Task[Any],
    samples: Iterable[tuple[Case, int, str]],
    answers: Answers,
    judge: CachedChat,
    *,
    concurrency: int = 1,
    progress: Progress | None = None,
) -> tuple[JudgeRef, list[Judged], GenerateStats]:
    """Judge every (case, sample, answer key) of a run: the judge requests generated (cached), then read back."""
    spec = _spec(task)
    planned = _plan(spec, list(samples), answers, judge.identity)
    asked = [p for p in planned if p.key]
    stats = generate(_as_task(task, spec), asked, judge, concurrency=concurrency, progress=progress)
    ref = _ref(spec, judge.identity, planned)
    return ref, judged_from_cache(task, ref, judge.cache), stats


def judge_ref(
    task: Task[Any], samples: Iterable[tuple[Case, int, str]], answers: Answers, identity: Identity
) -> JudgeRef:
    """The judge requests of a run's samples keyed for the judge `identity`, asking nothing: where that judge's
    judgements of these answers are cached, if it made them (rescore reads them back)."""
    spec = _spec(task)
    return _ref(spec, identity, _plan(spec, list(samples), answers, identity))


def known_judge(manifests: Iterable[Manifest], backend: str, model: str = "") -> Identity | None:
    """The identity (digest and options included) of the judge `backend`/`model` as the latest run it judged
    recorded it; any model of the backend when `model` is ""; None when no run was judged by it."""
    judged = sorted((m for m in manifests if m.judge is not None), key=lambda m: (m.created, m.run_id), reverse=True)
    for m in judged:
        j = m.judge
        if j is not None and j.backend == backend and model in ("", j.model):
            return Identity(j.backend, j.model, j.digest, dict(j.options))
    return None


def judged_from_cache(task: Task[Any], ref: JudgeRef, cache: Answers) -> list[Judged]:
    """Each recorded judgement read from the cache; any missing is an error naming the samples, never a request."""
    spec = _spec(task)
    entries = cache.get_many([s.key for s in ref.samples if s.key])
    missing = [f"{s.case}#{s.sample}" for s in ref.samples if s.key and entries[s.key] is None]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise MissingSampleError(
            f"{len(missing)} judgement(s) are not in the cache ({shown}): rerun the eval with its judge to judge them"
        )
    judged = []
    for s in ref.samples:
        entry = entries.get(s.key) if s.key else None
        if entry is None:
            judged.append(Judged(s.case, s.sample, False, NOTHING_TO_JUDGE))
            continue
        passed, reason, unparseable = parse_judgement(spec, entry.text)
        judged.append(Judged(s.case, s.sample, passed, reason, unparseable))
    return judged


def judged_record(ref: JudgeRef, judged: Sequence[Judged], stats: GenerateStats | None = None) -> dict[str, Any]:
    """The report's `judged` block: the judge, counts, the judge stage's cache use, every sample's grade and reason."""
    cache = {} if stats is None else {"hits": stats.hits, "misses": stats.misses, "seconds": stats.seconds}
    return {
        "judge": ref.identity(),
        **({"generate": cache} if cache else {}),
        "samples": len(judged),
        "passed": sum(j.passed for j in judged),
        "unparseable": sorted(f"{j.id}#{j.sample}" for j in judged if j.unparseable),
        "results": [dataclasses.asdict(j) for j in judged],
    }


def _spec(task: Task[Any]) -> JudgeSpec[Any]:
    if task.judge is None:
        raise MissingSampleError(f"the {task.name} task has no judge stage")
    return task.judge


def _as_task(task: Task[Any], spec: JudgeSpec[Any]) -> Task[Any]:
    """The task as the generate loop sees the judge stage: the judge's schema is what is sent."""
    return dataclasses.replace(task, name=f"{task.name} judge", output_model=spec.output_model)


def _plan(
    spec: JudgeSpec[Any], samples: Sequence[tuple[Case, int, str]], answers: Answers, identity: Identity
) -> list[Planned]:
    entries = answers.get_many([key for _, _, key in samples])
    schema = spec.schema
    planned = []
    for case, sample, key in samples:
        entry = entries[key]
        if entry is None:
            raise MissingSampleError(f"{case.id}#{sample}: its answer is not in the cache, so it cannot be judged")
        messages: list[Message] | None = spec.render(case, entry.text)
        judge_key = request_key(identity, messages, schema, sample) if messages is not None else ""
        planned.append(Planned(case, sample, messages or [], judge_key))
    return planned


def _ref(spec: JudgeSpec[Any], identity: Identity, planned: Sequence[Planned]) -> JudgeRef:
    return JudgeRef(
        backend=identity.kind,
        model=identity.model,
        digest=identity.digest,
        options=dict(identity.options),
        prompt_fingerprint=judge_fingerprint(spec),
        samples=[JudgeSample(case=p.case.id, sample=p.sample, key=p.key) for p in planned],
    )
