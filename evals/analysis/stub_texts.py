"""The stub backend's answer text on each case: what `degenerate` checks a run's answers against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attest.backends.stub import StubBackend
from evals.corpus.cases import AnyCase
from evals.engine.task import Task

__all__ = ["stub_texts"]


def stub_texts(task: Task[Any], cases: Sequence[AnyCase]) -> dict[str, str]:
    """case id -> the stub's raw answer to the task's production prompt for that case (in process)."""
    backend = StubBackend()
    return {case.id: backend.chat_json(task.render(case), task.schema).text for case in cases}
