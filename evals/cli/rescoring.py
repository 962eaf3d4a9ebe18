"""Re-scoring a recorded run from its cached answers with today's scorer: for `rescore` and `compare`.

Nothing here builds a backend: a sample missing from the cache is an error, never a
model request. `missing` counts what a re-score would lack, so a caller can say how many
samples are gone before it tries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attest.errors import AttestError
from evals import tasks
from evals.corpus import paths
from evals.corpus.cases import Case
from evals.engine import provenance
from evals.engine.chat import MissingSampleError
from evals.engine.execute import report_of
from evals.engine.judge import Judged, judge_fingerprint, judge_ref, judged_from_cache, judged_record
from evals.engine.pipeline import EvalResult, corpus_digests, load_cases, score_planned
from evals.engine.task import Task
from evals.render.judge_status import judge_name
from evals.store.keys import Identity
from evals.store.models import JudgeRef, Manifest, Report
from evals.store.protocols import Answers
from evals.store.records import RunError

if TYPE_CHECKING:
    from evals.analysis.pairing import Run

__all__ = ["Rescored", "as_run", "missing", "one_scorer", "rescore_run", "some", "today_scorer", "under_today_scorer"]


@dataclass(frozen=True)
class Rescored:
    manifest: Manifest
    result: EvalResult
    corpus: Path
    changes: list[str]  # what differs from when the run was made: labels, scorer, judge prompt
    judged: list[Judged] | None = None  # a judged run's judgements, read back from the cache
    judge: JudgeRef | None = None  # --judge-backend: the judge they are another judge's (else the run's own)

    def report(self) -> Report:
        """The re-scored report record, with the judged block of a judged run."""
        report = report_of(self.manifest, self.result, None)
        ref = self.judge or self.manifest.judge
        if self.judged is None or ref is None:
            return report
        return report.replace(judged=judged_record(ref, self.judged))


def rescore_run(
    manifest: Manifest,
    cache: Answers,
    corpus: Path | None = None,
    judge: Identity | None = None,
    *,
    paths_local: bool = True,
) -> Rescored:
    """Score a run's cached samples with today's scorer against today's labels; a judged run's judgements (or,
    with `judge`, that judge's judgements of the same answers) read back from the cache. A shared store's run
    (`paths_local=False`) is scored against the task's corpus in this checkout, never a path recorded on another
    machine (hashes compared)."""
    if manifest.task not in tasks.names():
        raise RunError(f"run {manifest.run_id}: unknown task {manifest.task!r} ({tasks.known()})")
    task = tasks.get(manifest.task)
    path = corpus or (paths.resolve_corpus(manifest.provenance.corpus) if paths_local else task.corpus)
    loaded = load_cases(task, path)
    cases: dict[str, Case] = {c.id: c for c in loaded}
    gone = sorted({s.case for s in manifest.samples} - set(cases))
    if gone:
        raise RunError(
            f"run {manifest.run_id}: cases {gone[:5]} are not in {path}; rescore it with --run ID --corpus OLD_FILE"
        )
    samples = [(cases[s.case], s.sample, s.key) for s in manifest.samples]
    changes = _changes(manifest, task, loaded, path)
    try:
        result = score_planned(task, samples, cache)
        ref = judge_ref(task, samples, cache, judge) if judge is not None and task.judge is not None else None
        if ref is not None:
            changes.append(f"judged from the cache by {judge_name(ref.identity())}, not by the run's own judge")
        ref_used = ref or manifest.judge
        judged = judged_from_cache(task, ref_used, cache) if ref_used is not None else None
    except MissingSampleError as exc:
        raise RunError(f"run {manifest.run_id}: {exc}") from None
    return Rescored(manifest, result, path, changes, judged, ref)


def _changes(manifest: Manifest, task: Task[Any], corpus: Sequence[Case], path: Path) -> list[str]:
    changes = []
    recorded, now = manifest.provenance.corpus_sha256, corpus_digests(corpus)
    splits = [manifest.split] if manifest.split in now else sorted(now)  # "all" checks every split
    differs = [s for s in splits if recorded.get(s) != now.get(s)]
    if differs:
        shown = ", ".join(f"{s} {now.get(s, 'n/a')[:12]} (run: {recorded.get(s, 'n/a')[:12]})" for s in differs)
        changes.append(f"labels differ from the run's: split sha256 of {path}: {shown}; scored with these labels")
        ran = manifest.case_sha256
        relabelled = [c.id for c in corpus if c.id in ran and ran[c.id] != provenance.case_sha256(c)]
        if relabelled:
            changes.append(f"cases whose label or inputs changed: {some(relabelled)}")
    scorer = provenance.scorer_fingerprint(task.score_one)
    if scorer != manifest.provenance.scorer_fingerprint:
        changes.append(f"scorer changed since the run ({manifest.provenance.scorer_fingerprint[:12]} -> {scorer[:12]})")
    if manifest.judge is not None and task.judge is not None:
        then, today = manifest.judge.prompt_fingerprint, judge_fingerprint(task.judge)
        if then != today:
            changes.append(f"judge prompt changed since the run ({then[:12]} -> {today[:12]}); judged as the run was")
    return changes


def some(names: list[str], limit: int = 10) -> str:
    more = f" (and {len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def missing(manifest: Manifest, cache: Answers | None) -> int:
    """How many of the run's samples have no answer in the cache (all of them without a cache)."""
    keys = [s.key for s in manifest.samples]
    if cache is None:
        return len(keys)
    found = cache.get_many(keys)
    return sum(1 for key in keys if found.get(key) is None)


def today_scorer(task_name: str) -> str:
    """The fingerprint of the scorer a re-score uses today for `task_name`."""
    return provenance.scorer_fingerprint(tasks.get(task_name).score_one)


def as_run(done: Rescored, prompts: tuple[str, ...] = ()) -> Run:
    """A re-scored run as `compare` pairs it: today's scores, and today's scorer in its provenance."""
    from evals.analysis.pairing import Run  # the statistics only when runs are paired

    manifest = under_today_scorer(done.manifest)
    return Run(manifest, report_of(manifest, done.result, None), prompts)


def under_today_scorer(m: Manifest) -> Manifest:
    """The manifest of a run re-scored by today's scorer, saying so: pairs of such runs are scored by one scorer."""
    return m.replace(provenance=m.provenance.replace(scorer_fingerprint=today_scorer(m.task)))


def one_scorer(
    base: Run, cand: Run, cache: Answers | None, *, paths_local: bool = True
) -> tuple[Run, Run, tuple[str, ...]]:
    """Both runs scored by one scorer: as they are when their scorers agree, else both re-scored from their
    cached answers with today's (model-free). When answers are missing they stay as they are, and the note
    says how many are gone (the comparison is then withheld: a scorer difference is never credited)."""
    was = (base.manifest.provenance.scorer_fingerprint, cand.manifest.provenance.scorer_fingerprint)
    if was[0] == was[1]:
        return base, cand, ()
    gone = [(run.run_id, missing(run.manifest, cache), len(run.manifest.samples)) for run in (base, cand)]
    if cache is None or any(n for _, n, _ in gone):
        said = " and ".join(f"{n} of {total} samples of run {run_id}" for run_id, n, total in gone if n)
        return base, cand, (f"the answers of {said} are not in the cache (pruned), so both cannot be re-scored",)
    try:
        done = [as_run(rescore_run(r.manifest, cache, paths_local=paths_local), r.prompts) for r in (base, cand)]
    except AttestError as exc:
        return base, cand, (f"they could not be re-scored with one scorer: {exc}",)
    now = done[0].manifest.provenance.scorer_fingerprint
    note = (
        f"scorer: the runs were scored by different scorers ({was[0][:12]}, {was[1][:12]}), so both were re-scored "
        f"from their cached answers with today's ({now[:12]}) before deciding"
    )
    return done[0], done[1], (note,)
