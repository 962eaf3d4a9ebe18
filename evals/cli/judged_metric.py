"""`compare --metric judged`: decide on the judged score, only for a judge measured against people.

Both runs must be judged (`--judge-backend` when they ran), by one judge (identity and judge
prompt: a judge change between the runs is a confounder, like a scorer change), and that
judge must have a `judge_check` validation on today's judgement corpus with kappa's lower
bound at least the threshold. Otherwise the comparison is withheld: inconclusive, exit 3,
with one line saying why and the `judge_check` command to run. When it may decide, each
run's report is replaced by its judged grades (pass 1, fail 0) and compared as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from evals import tasks
from evals.analysis.pairing import Run
from evals.corpus.judgements import judgements_sha256, load_judgements
from evals.store.records import RunStore
from evals.store.validation import Validation, validation_id

__all__ = ["JudgeStatus", "judge_check_command", "judge_status", "judged_runs"]

THRESHOLD = 0.6  # as judge_check's


@dataclass(frozen=True)
class JudgeStatus:
    """A run's judge as `compare` and the pages show it: who, its validation if any, and whether it decides."""

    judge: Mapping[str, Any]
    validation: Validation | None
    corpus_sha256: str

    @property
    def validated(self) -> bool:
        return self.validation is not None and self.validation.low >= THRESHOLD

    def line(self) -> str:
        j = self.judge
        who = f"{j['backend']} {j['model']} (judge prompt {str(j['prompt_fingerprint'])[:12]})"
        v = self.validation
        if v is None:
            return f"{who}: no judge_check on the current judgement corpus ({self.corpus_sha256[:12]}): not validated"
        state = "validated" if self.validated else f"not validated (lower bound under {THRESHOLD})"
        return f"{who}: kappa {v.kappa:.2f} [{v.low:.2f}, {v.high:.2f}] n={v.n}: {state}"


def judge_status(store: RunStore, run: Run) -> JudgeStatus | None:
    """The run's judge and its validation on today's judgement corpus; None for a run nobody judged."""
    judge = run.manifest.judge
    task = tasks.get(run.manifest.task) if run.manifest.task in tasks.names() else None
    if judge is None or task is None or task.judge is None:
        return None
    sha = judgements_sha256(load_judgements(task.judge.corpus))
    identity = judge.identity()
    found = validation_id(identity, sha)
    record = store.load(found, "validation", Validation) if store.exists(found, "validation") else None
    return JudgeStatus(identity, record, sha)


def judge_check_command(task: str, judge: Mapping[str, Any]) -> str:
    """The judge_check command that would validate this judge."""
    command = f"python -m evals.judge_check {task} --judge-backend {judge['backend']} --judge-model {judge['model']}"
    temperature = judge.get("options", {}).get("temperature", 0)
    return command + (f" --judge-temperature {temperature}" if temperature else "")


def judged_runs(store: RunStore, base: Run, cand: Run) -> tuple[Run, Run, str] | str:
    """Both runs scored by their judgements and the judge's line, or why the judged score cannot decide."""
    statuses = [judge_status(store, run) for run in (base, cand)]
    unjudged = [run.run_id for run, s in zip((base, cand), statuses, strict=True) if s is None]
    if unjudged:
        return (
            f"run {', '.join(unjudged)} was not judged, so there is no judged score: rerun its eval with "
            "--judge-backend B --judge-model M (the answers come from the cache), or compare --metric score"
        )
    b, c = statuses
    assert b is not None and c is not None
    if b.judge != c.judge:
        return (
            f"the judge differs between the runs ({b.line()} / {c.line()}), a confounder like a scorer change: "
            "judge both runs with one judge (rerun each eval with the same --judge-backend and --judge-model)"
        )
    if not b.validated:
        return (
            f"the judged score decides only for a validated judge; judge {b.line()}: "
            f"run `{judge_check_command(base.manifest.task, b.judge)}` (exit 0 validates it)"
        )
    return _scored(base), _scored(cand), f"judged by {b.line()}"


def _scored(run: Run) -> Run:
    """The run with its judged grades as its per-sample scores (pass 1, fail 0)."""
    rows = [
        {
            "id": r["id"],
            "sample": r["sample"],
            "score": 1.0 if r["passed"] else 0.0,
            "errors": [] if r["passed"] else [r["reason"]],
        }
        for r in run.report.judged["results"]
    ]
    overall = sum(r["score"] for r in rows) / len(rows) if rows else 0.0
    return replace(run, report=run.report.replace(results=rows, overall=overall))
