"""The small run records beside the manifest and report: what `runs list` reads of a report, the
optimiser's decision, and a generating run's progress. Strict like every record (evals/store/models.py).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from msgspec import Meta

from evals.store.models import RUN_ID, Record

__all__ = ["Decision", "ReportHead", "RunProgress"]

_Time = Annotated[float, Meta(ge=0.0, le=1e11)]  # as models.py's
_Count = Annotated[int, Meta(ge=0, le=10**9)]
_Unit = Annotated[float, Meta(ge=0.0, le=1.0)]
_RunId = Annotated[str, Meta(pattern=RUN_ID.pattern)]


class ReportHead(Record, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """What `runs list` reads of a report.json: its score, without its per-case results (the whole
    report is checked where it is used: show, rescore, compare). Other fields are skipped unread."""

    kind: ClassVar[str] = "report"

    schema_version: Literal[1]
    run_id: _RunId
    overall: _Unit


class Decision(Record, frozen=True, kw_only=True):
    """The optimiser's gate, recorded beside the candidate run so rescore can re-check it."""

    kind: ClassVar[str] = "decision"

    schema_version: Literal[1] = 1
    baseline_run: _RunId
    candidate_run: _RunId
    margin: Annotated[float, Meta(ge=0.0, lt=1.0)]
    verdict: Literal["ship", "regress", "inconclusive"]
    mean_difference: Annotated[float, Meta(ge=-1.0, le=1.0)]
    interval: tuple[float, float]
    p_value: _Unit
    n: _Count
    decided_at: _Time


class RunProgress(Record, frozen=True, kw_only=True):
    """progress.json: how many of a generating run's samples are settled, rewritten by its writer about
    once a second, so `runs list` shows a live run as k/n (and one whose writer is gone as interrupted)."""

    kind: ClassVar[str] = "progress"

    schema_version: Literal[1] = 1
    run_id: _RunId
    done: _Count
    total: _Count
    updated: _Time
