"""One interval method per task (issue 22): fixed by the task, never by whether one run's scores happen to be 0/1."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from evals import reaction_eval, tasks
from evals.analysis import uncertainty
from evals.engine.pipeline import CaseResult


def _results(cases: list[Any], scores: list[float]) -> list[CaseResult]:
    return [CaseResult(c.id, 0, s, [], 0.0, {"verdict": c.verdict}) for c, s in zip(cases, scores, strict=True)]


def _cases() -> list[Any]:
    return reaction_eval.load_cases(split="dev")[:20]


@pytest.mark.parametrize("name", tasks.names())
def test_every_task_names_its_interval_method(name: str) -> None:
    assert tasks.get(name).interval in ("wilson", "bootstrap")


def test_a_graded_task_keeps_the_bootstrap_when_a_run_happens_to_score_only_0_and_1() -> None:
    """Reaction is graded (a right verdict without the item named earns 0.75): all-0/1 runs must not switch."""
    cases = _cases()
    binary = _results(cases, [float(i % 3 != 0) for i in range(len(cases))])
    graded = _results(cases, [0.75 if i % 3 == 0 else 1.0 for i in range(len(cases))])
    assert reaction_eval.TASK.interval == "bootstrap"
    assert uncertainty.block(reaction_eval.TASK, cases, binary)["score"]["method"] == "bootstrap BCa"
    assert uncertainty.block(reaction_eval.TASK, cases, graded)["score"]["method"] == "bootstrap BCa"
    family = uncertainty.block(reaction_eval.TASK, cases, binary)["families"]
    assert {row["method"] for row in family} <= {"bootstrap BCa", "none: every score is equal"}


def test_a_binary_task_uses_wilson_and_refuses_a_graded_score() -> None:
    cases = _cases()
    binary_task = dataclasses.replace(reaction_eval.TASK, interval="wilson")
    binary = _results(cases, [float(i % 3 != 0) for i in range(len(cases))])
    assert uncertainty.block(binary_task, cases, binary)["score"]["method"] == "Wilson"
    with pytest.raises(ValueError, match="0/1 scores"):
        uncertainty.block(binary_task, cases, _results(cases, [0.75] + [1.0] * (len(cases) - 1)))


def test_with_repeats_a_binary_task_averages_to_graded_case_scores_and_uses_the_bootstrap() -> None:
    binary_task = dataclasses.replace(reaction_eval.TASK, interval="wilson")
    assert uncertainty.interval_method(binary_task, repeat=1) == "Wilson"
    assert uncertainty.interval_method(binary_task, repeat=3) == "bootstrap BCa"
