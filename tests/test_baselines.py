"""The baselines beside every report: the stub and the best constant answer, on the run's own cases."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from attest.backends.stub import StubBackend
from attest.vocab import REFUSAL
from evals import explanation_eval, reaction_eval, tagging_eval
from evals.analysis import baselines
from evals.analysis.baselines import Candidate
from evals.corpus.cases import ExplanationCase, ReactionCase, TaggingCase
from evals.engine.pipeline import Task

TASKS: dict[str, Task[Any]] = {t.name: t for t in (tagging_eval.TASK, reaction_eval.TASK, explanation_eval.TASK)}


def _dev(name: str) -> list[Any]:
    return [c for c in _load(name) if c.split == "dev"]


def _load(name: str) -> list[Any]:
    module = {"tagging": tagging_eval, "reaction": reaction_eval, "explanation": explanation_eval}[name]
    cases: list[Any] = module.load_cases()
    return cases


def _reaction(yes: int, no: int) -> list[ReactionCase]:
    cases = [c for c in reaction_eval.load_cases() if c.split == "dev"]
    return [c for c in cases if c.verdict][:yes] + [c for c in cases if not c.verdict][:no]


# --- constant answers are scored by the task's own score_one ------------------------------


@pytest.mark.parametrize("name", TASKS)
def test_trivial_baseline_is_the_best_candidate_scored_by_score_one(name: str) -> None:
    task, cases = TASKS[name], _dev(name)
    found = baselines.trivial(task, cases)
    assert found is not None and set(found.scores) == {c.id for c in cases}
    means = []
    for candidate in baselines.candidates(name, cases):
        scores = {c.id: task.score_one(c, candidate.text)["score"] for c in cases}
        means.append(sum(scores.values()) / len(scores))
        if candidate.describe in found.answer:
            assert found.scores == scores  # exactly what score_one gives the constant answer, case by case
    assert sum(found.scores.values()) / len(cases) == max(means)
    assert sum(1 for c in baselines.candidates(name, cases) if c.describe in found.answer) == 1


def test_best_constant_keeps_the_first_of_equal_candidates_and_needs_one() -> None:
    cases = _reaction(2, 2)
    same = json.dumps({"verdict": True, "confidence": 3, "reasoning": "x"})
    chosen = baselines.best_constant(reaction_eval.TASK, cases, [Candidate(same, "first"), Candidate(same, "second")])
    assert chosen.answer.startswith("first")
    with pytest.raises(ValueError, match="at least one candidate"):
        baselines.best_constant(reaction_eval.TASK, cases, [])


def test_an_unparseable_constant_scores_zero_like_any_unparseable_answer() -> None:
    cases = _reaction(3, 3)
    chosen = baselines.best_constant(reaction_eval.TASK, cases, [Candidate("not json", "garbage")])
    assert set(chosen.scores.values()) == {0.0}


# --- the majority class comes from the run's cases -----------------------------------------


@pytest.mark.parametrize(("yes", "no", "verdict", "count"), [(5, 3, True, 5), (2, 6, False, 6), (3, 3, False, 3)])
def test_majority_class_is_computed_from_the_cases_given(yes: int, no: int, verdict: bool, count: int) -> None:
    cases = _reaction(yes, no)
    assert baselines.majority_verdict(cases) == (verdict, count)
    (candidate,) = baselines.candidates("reaction", cases)
    assert json.loads(candidate.text)["verdict"] is verdict
    assert f"the majority class, {count} of {yes + no} labels" in candidate.describe


def test_the_dev_splits_majority_is_skip_but_a_subset_of_readers_says_read() -> None:
    """The same function gives a different constant on other cases: nothing is fixed in advance."""
    dev = [c for c in reaction_eval.load_cases() if c.split == "dev"]
    assert baselines.majority_verdict(dev)[0] is False
    assert baselines.majority_verdict(_reaction(4, 1))[0] is True


def test_tagging_candidates_are_built_from_the_most_frequent_gold_tags_of_the_cases() -> None:
    cases = [c for c in tagging_eval.load_cases() if c.split == "dev"]
    top = [tag for tag, _ in Counter(t for c in cases for t in c.tags).most_common(3)]
    texts = [json.loads(c.text)["tags"] for c in baselines.candidates("tagging", cases)]
    assert texts == [[top[0]], [top[1]], [top[2]], top[:2], top[:3]]
    single = [c for c in tagging_eval.load_cases() if len(c.tags) == 1]
    tag = single[0].tags[0]
    one: list[TaggingCase] = [c for c in single if c.tags == [tag]]
    assert [json.loads(c.text)["tags"] for c in baselines.candidates("tagging", one)] == [[tag]]


def test_explanation_candidates_include_the_exact_refusal_which_wins_on_refuse_cases() -> None:
    cases: list[ExplanationCase] = [c for c in explanation_eval.load_cases() if c.refuse][:4]
    found = baselines.trivial(explanation_eval.TASK, cases)
    assert found is not None and REFUSAL in found.answer
    assert set(found.scores.values()) == {1.0}  # the mandated wording, exactly: full credit by score_one


def test_explanation_on_match_cases_never_picks_the_refusal() -> None:
    cases = [c for c in explanation_eval.load_cases() if not c.refuse and c.split == "dev"]
    found = baselines.trivial(explanation_eval.TASK, cases)
    assert found is not None and REFUSAL not in found.answer
    assert sum(found.scores.values()) > 0.0  # the sentence naming the most frequent topic earns something


def test_an_unknown_task_has_no_trivial_baseline() -> None:
    cases = _reaction(1, 1)
    assert baselines.candidates("no-such-task", cases) == []


# --- the stub baseline is the stub backend through the production renderer ------------------


def _stub_scores(task: Task[Any], cases: Sequence[Any]) -> dict[str, float]:
    stub = StubBackend()
    return {c.id: task.score_one(c, stub.chat_json(task.render(c), task.schema).text)["score"] for c in cases}


@pytest.mark.parametrize("name", TASKS)
def test_stub_baseline_is_the_stub_answering_each_rendered_case(name: str) -> None:
    task, cases = TASKS[name], _dev(name)[:12]
    found = baselines.stub(task, cases)
    assert found.name == "stub" and StubBackend.model in found.answer
    assert found.scores == _stub_scores(task, cases)


def test_baselines_cover_exactly_the_cases_given() -> None:
    cases = _reaction(3, 2)
    found = baselines.baselines(reaction_eval.TASK, cases)
    assert [b.name for b in found] == ["stub", "trivial"]
    assert all(set(b.scores) == {c.id for c in cases} for b in found)
