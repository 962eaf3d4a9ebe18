"""A run's judge as `compare` and the pages show it: who judged, its judge_check validation, and whether
that validation lets the judged score decide (kappa's lower bound at least THRESHOLD on today's
judgement corpus). Reads the run store and the task's judgement corpus; never a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attest.errors import AttestError
from evals import tasks
from evals.corpus.judgements import judgements_sha256, load_judgements
from evals.store.models import Manifest, Report
from evals.store.protocols import Runs
from evals.store.validation import Validation, validation_id

__all__ = ["THRESHOLD", "JudgeStatus", "judge_check_command", "judge_line", "judge_name", "judge_status", "judged_card"]

THRESHOLD = 0.6  # judge_check's: a judge whose kappa lower bound reaches it is validated


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
        who = judge_name(self.judge)
        v = self.validation
        if v is None:
            return f"{who}: no judge_check on the current judgement corpus ({self.corpus_sha256[:12]}): not validated"
        state = "validated" if self.validated else f"not validated (lower bound under {THRESHOLD})"
        return f"{who}: kappa {v.kappa:.2f} [{v.low:.2f}, {v.high:.2f}] n={v.n}: {state}"


def judge_name(judge: Mapping[str, Any]) -> str:
    """`backend model (judge prompt abc123...)`."""
    return f"{judge['backend']} {judge['model']} (judge prompt {str(judge['prompt_fingerprint'])[:12]})"


def judge_status(store: Runs, manifest: Manifest) -> JudgeStatus | None:
    """The run's judge and its validation on today's judgement corpus; None for a run nobody judged."""
    judge = manifest.judge
    task = tasks.get(manifest.task) if manifest.task in tasks.names() else None
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


def judge_line(store: Runs, manifest: Manifest) -> str:
    """A judged run's judge and whether judge_check validated it; "" for a run nobody judged."""
    if manifest.judge is None:
        return ""
    try:
        status = judge_status(store, manifest)
    except AttestError as exc:  # the judgement corpus unreadable: the run is still shown
        return f"{judge_name(manifest.judge.identity())}: validation unknown ({exc})"
    return "" if status is None else status.line()


def judged_card(report: Report | None, line: str) -> dict[str, str]:
    """The judged card: the judged pass rate with its interval, the judge, and its validation."""
    from evals.analysis.judged import judged_estimate

    found = judged_estimate(report.judged) if report is not None and report.judged else None
    if report is None or found is None:
        return {}
    estimate, method = found
    who = judge_name(report.judged["judge"])
    unparseable = len(report.judged.get("unparseable", []))
    return {
        "text": estimate.format(),
        "method": method,
        "judge": who,
        "validation": line or "validation unknown (see `compare --metric judged`)",
        "unparseable": f"{unparseable} unparseable judgement(s) counted as fail" if unparseable else "",
    }
