"""The baselines a model must beat, scored on a run's own cases by the task's own `score_one`.

- `stub`: attest's StubBackend (keyword overlap between reader and item), run in
  process through `evals.engine.execute.evaluate`: no network, nothing on disk, one sample
  per case (it is deterministic).
- `trivial`: the best of the task's cheap strategies (`Task.strategies`: a constant
  answer, or one built from the case's own text without reading it, such as the
  title echoed back), chosen on the cases it is scored on. Each task module lists the
  strongest cheap strategies known for it, so "model - trivial" is an honest floor.

A strategy is chosen on the cases it is scored on, as a majority class always is: it
is the best that a model reading nothing but the surface of its input could do on
these cases, so a model that does not beat it has learnt nothing the task asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attest.backends.stub import StubBackend
from evals.corpus.cases import Case
from evals.engine.chat import unsampled
from evals.engine.execute import evaluate
from evals.engine.task import Strategy, Task

__all__ = ["Baseline", "baselines", "best_strategy", "stub", "trivial"]


@dataclass(frozen=True)
class Baseline:
    """A baseline's score on each case (by id), and what it answered."""

    name: str  # "stub" or "trivial"
    answer: str  # in prose: "the stub backend (keyword overlap)", "always verdict false (...)"
    scores: dict[str, float]


def stub(task: Task[Any], cases: Sequence[Case]) -> Baseline | None:
    """The stub backend's score on `cases`: the production renderer, the task's scorer, in memory (None: the
    task has no stub answerer)."""
    if task.stub_answer is None:
        return None
    backend = StubBackend(answer=task.stub_answer)
    result = evaluate(task, unsampled(backend.chat_json), cases)
    return Baseline("stub", f"the stub backend, {backend.model}: keyword overlap of reader and item", result.by_case())


def best_strategy(task: Task[Any], cases: Sequence[Case], options: Sequence[Strategy[Any]]) -> Baseline:
    """The strategy whose answers score best on `cases` by `task.score_one` (the first on a tie)."""
    if not options or not cases:
        raise ValueError("best_strategy needs at least one strategy and one case")
    scored = [(s, {case.id: float(task.score_one(case, s.answer(case))["score"]) for case in cases}) for s in options]
    best, scores = max(scored, key=lambda pair: sum(pair[1].values()))  # max keeps the first of equals
    also = f"; the best of {len(options)} cheap strategies" if len(options) > 1 else ""
    return Baseline("trivial", f"{best.describe}{also}", scores)


def trivial(task: Task[Any], cases: Sequence[Case], options: Sequence[Strategy[Any]] | None = None) -> Baseline | None:
    """The best cheap strategy's score on `cases`, or None when the task lists none; `options` is
    `task.strategies(cases)` if already computed (fitting them scores every train case several times)."""
    options = options if options is not None else (task.strategies(cases) if cases else [])
    return best_strategy(task, cases, options) if options else None


def baselines(task: Task[Any], cases: Sequence[Case], options: Sequence[Strategy[Any]] | None = None) -> list[Baseline]:
    """The stub's and the trivial baseline's scores on exactly `cases` (`options`: the task's cheap strategies
    on these cases, if the caller has fitted them already)."""
    found = [stub(task, cases), trivial(task, cases, options)]
    return [b for b in found if b is not None]
