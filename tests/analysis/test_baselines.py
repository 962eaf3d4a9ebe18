"""The baselines beside every report: the stub and the best cheap strategy, on the run's own cases."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from attest.backends.stub import StubBackend
from attest.vocab import REFUSAL
from evals import explanation_eval, reaction_eval, tagging_eval, tasks
from evals.analysis import baselines
from evals.corpus.cases import ExplanationCase, ReactionCase, TaggingCase
from evals.corpus.words import content_words
from evals.engine.task import Strategy, Task

TASKS: dict[str, Task[Any]] = {t.name: t for t in tasks.all_tasks()}  # the registry's, not a copy


def _dev(name: str) -> list[Any]:
    return [c for c in _load(name) if c.split == "dev"]


def _load(name: str) -> list[Any]:
    module = {"tagging": tagging_eval, "reaction": reaction_eval, "explanation": explanation_eval}[name]
    cases: list[Any] = module.load_cases()
    return cases


def _reaction(yes: int, no: int) -> list[ReactionCase]:
    cases = [c for c in reaction_eval.load_cases() if c.split == "dev"]
    return [c for c in cases if c.verdict][:yes] + [c for c in cases if not c.verdict][:no]


# --- strategies are scored by the task's own score_one ------------------------------------


@pytest.mark.parametrize("name", TASKS)
def test_trivial_baseline_is_the_best_strategy_scored_by_score_one(name: str) -> None:
    task, cases = TASKS[name], _dev(name)
    found = baselines.trivial(task, cases)
    assert found is not None and set(found.scores) == {c.id for c in cases}
    means = []
    for strategy in task.strategies(cases):
        scores = {c.id: task.score_one(c, strategy.answer(c))["score"] for c in cases}
        means.append(sum(scores.values()) / len(scores))
        if found.answer.startswith(strategy.describe + ";"):
            assert found.scores == scores  # exactly what score_one gives the strategy's answers, case by case
    assert sum(found.scores.values()) / len(cases) == max(means)
    assert sum(1 for s in task.strategies(cases) if found.answer.startswith(s.describe + ";")) == 1


def test_best_strategy_keeps_the_first_of_equal_strategies_and_needs_one() -> None:
    cases = _reaction(2, 2)
    same = json.dumps({"verdict": True, "confidence": 3, "reasoning": "x"})
    chosen = baselines.best_strategy(
        reaction_eval.TASK, cases, [Strategy.constant(same, "first"), Strategy.constant(same, "second")]
    )
    assert chosen.answer.startswith("first")
    with pytest.raises(ValueError, match="at least one strategy"):
        baselines.best_strategy(reaction_eval.TASK, cases, [])


def test_an_unparseable_answer_scores_zero_like_any_unparseable_answer() -> None:
    cases = _reaction(3, 3)
    chosen = baselines.best_strategy(reaction_eval.TASK, cases, [Strategy.constant("not json", "garbage")])
    assert set(chosen.scores.values()) == {0.0}


# --- each task's strongest cheap strategies (issue 22: "model - trivial" is an honest floor) ---------------


def _mean(task: Task[Any], cases: Sequence[Any], answer: Any) -> float:
    return sum(task.score_one(c, answer(c))["score"] for c in cases) / len(cases)


def test_reaction_trivial_is_a_constant_verdict_with_the_title_as_reasoning() -> None:
    """'Always no, the title as the reasoning' is what a model reading nothing can score; the floor says so."""
    dev = _dev("reaction")
    always_no = _mean(
        reaction_eval.TASK, dev, lambda c: json.dumps({"verdict": False, "confidence": 3, "reasoning": c.title})
    )
    found = baselines.trivial(reaction_eval.TASK, dev)
    assert found is not None  # the word-overlap verdict, fitted on train, now beats it (tests/engine/test_floors.py)
    assert sum(found.scores.values()) / len(dev) >= always_no


@pytest.mark.parametrize(("yes", "no", "word"), [(5, 1, "true (read)"), (1, 5, "false (skip)")])
def test_reaction_trivial_takes_the_better_of_yes_and_no_on_the_cases_given(yes: int, no: int, word: str) -> None:
    cases = _reaction(yes, no)
    constants = [s for s in reaction_eval.strategies(cases) if s.describe.startswith("always")]
    found = baselines.best_strategy(reaction_eval.TASK, cases, constants)
    assert found.answer.startswith(f"always verdict {word}, the item's title")


def test_explanation_trivial_tries_the_title_echo_with_and_without_the_refuse_rule() -> None:
    dev = _dev("explanation")
    found = baselines.trivial(explanation_eval.TASK, dev)
    assert found is not None
    echoes = [s for s in explanation_eval.strategies(dev) if "You: {title}" in s.describe]
    assert len(echoes) == 2 and any(
        "refusing when interests and item share no content word" in s.describe for s in echoes
    )
    best = sum(found.scores.values()) / len(dev)
    assert all(best >= _mean(explanation_eval.TASK, dev, s.answer) for s in echoes)
    refuse_rule = next(s for s in echoes if "refusing" in s.describe)
    no_overlap = next(c for c in dev if not content_words(c.interests) & content_words(f"{c.title} {c.summary}"))
    assert json.loads(refuse_rule.answer(no_overlap)) == {"text": REFUSAL}


def test_explanation_floor_counts_the_readers_interests_echoed_back() -> None:
    """Echoing the interests names the reader's topic words and nothing of the item: it competes in the floor,
    and a list of words is no sentence, so on match cases it earns nothing (tests/engine/test_floors.py)."""
    dev = _dev("explanation")
    echoed = [s for s in explanation_eval.strategies(dev) if "words of the interests echoed" in s.describe]
    assert len(echoed) == 2
    found = baselines.trivial(explanation_eval.TASK, dev)
    assert found is not None
    best_echo = max(_mean(explanation_eval.TASK, dev, s.answer) for s in echoed)
    assert sum(found.scores.values()) / len(dev) >= best_echo


def test_tagging_strategies_are_the_most_frequent_gold_tags_of_the_cases() -> None:
    cases = [c for c in tagging_eval.load_cases() if c.split == "dev"]
    top = [tag for tag, _ in Counter(t for c in cases for t in c.tags).most_common(3)]
    texts = [json.loads(s.answer(cases[0]))["tags"] for s in tagging_eval.strategies(cases)]
    assert texts[:5] == [[top[0]], [top[1]], [top[2]], top[:2], top[:3]]  # then the nearest train case's tags
    single = [c for c in tagging_eval.load_cases() if len(c.tags) == 1]
    tag = single[0].tags[0]
    one: list[TaggingCase] = [c for c in single if c.tags == [tag]]
    assert [json.loads(s.answer(one[0]))["tags"] for s in tagging_eval.strategies(one)][:-1] == [[tag]]


def test_explanation_strategies_include_the_exact_refusal_which_wins_on_refuse_cases() -> None:
    cases: list[ExplanationCase] = [c for c in explanation_eval.load_cases() if c.refuse][:4]
    found = baselines.trivial(explanation_eval.TASK, cases)
    assert found is not None and set(found.scores.values()) == {1.0}  # the exact wording: full credit


def test_explanation_on_match_cases_never_picks_the_refusal() -> None:
    cases = [c for c in explanation_eval.load_cases() if not c.refuse and c.split == "dev"]
    found = baselines.trivial(explanation_eval.TASK, cases)
    assert found is not None and REFUSAL not in found.answer
    assert sum(found.scores.values()) > 0.0


def test_a_task_without_strategies_has_no_trivial_baseline() -> None:
    bare = dataclasses.replace(reaction_eval.TASK, strategies=lambda cases: [])
    assert baselines.trivial(bare, _reaction(1, 1)) is None


# --- the stub baseline is the stub backend through the production renderer ------------------


def _stub_scores(task: Task[Any], cases: Sequence[Any]) -> dict[str, float]:
    stub = StubBackend(answer=task.stub_answer)
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
