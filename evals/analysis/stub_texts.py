"""The stub backend's answer text on each case: what `degenerate` checks a run's answers against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attest.backends.stub import StubBackend
from evals.corpus.cases import Case
from evals.engine.task import Task

__all__ = ["stub_texts"]


def stub_texts(task: Task[Any], cases: Sequence[Case]) -> dict[str, str] | None:
    """case id -> the stub's raw answer to the task's production prompt for that case (in process); None: the
    task has no stub answerer."""
    if task.stub_answer is None:
        return None
    backend = StubBackend(answer=task.stub_answer)
    return {case.id: backend.chat_json(task.render(case), task.schema).text for case in cases}
