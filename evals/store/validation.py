"""A judge's validation record: `judge_check`'s measure of a judge against the human grades.

Validations live in the run store (local `cache/runs/` or a team's PostgreSQL store) beside
the runs, through the same `Runs` protocol, under ids that start with `VALIDATION_PREFIX`
(no run id does: run ids start with a date), and `run_ids` leaves them out of every listing.
One record per (judge identity, judge prompt, judgement corpus): `validation_id`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, ClassVar, Literal

from msgspec import Meta

from evals.store.models import Record

__all__ = ["VALIDATION_PREFIX", "Validation", "validation_id"]

VALIDATION_PREFIX = "judge-check-"
_Kappa = Annotated[float, Meta(ge=-1.0, le=1.0)]
_Unit = Annotated[float, Meta(ge=0.0, le=1.0)]
_Count = Annotated[int, Meta(ge=0, le=10**9)]
_Name = Annotated[str, Meta(max_length=1000)]


def validation_id(judge: dict[str, Any], corpus_sha256: str) -> str:
    """The store id of a judge's validation on one judgement corpus."""
    text = json.dumps({"judge": judge, "corpus": corpus_sha256}, sort_keys=True, separators=(",", ":"))
    return VALIDATION_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


class Validation(Record, frozen=True, kw_only=True):
    """What `compare --metric judged` trusts: a judge's kappa against the human grades, with its interval."""

    kind: ClassVar[str] = "validation"

    schema_version: Literal[1] = 1
    run_id: Annotated[str, Meta(pattern=r"^judge-check-[0-9a-f]{40}$")]  # validation_id(judge, corpus_sha256)
    judge: dict[str, Any]  # JudgeRef.identity(): backend, model, digest, options, prompt_fingerprint
    task: _Name
    corpus: _Name
    corpus_sha256: Annotated[str, Meta(max_length=128)]
    split: _Name
    n: _Count
    kappa: _Kappa
    low: _Kappa
    high: _Kappa
    accuracy: _Unit
    unparseable: _Count = 0
    threshold: _Unit
    validated: bool
    checked_at: Annotated[float, Meta(ge=0.0, le=1e11)]
