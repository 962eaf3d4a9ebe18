"""Floors are the strongest cheap strategies known, and cheap tricks earn no more than the stub (issue 31, 2-3).

The audit's tricks, on dev with the project's own scorers: the nearest train case's gold
tags (tagging, 0.39 against a printed floor of 0.15) and "You: " + 13 interest words,
refusing when fewer than 3 are in the item (explanation, 0.71 against the stub's 0.34).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from attest.explain import REFUSAL
from evals import explanation_eval, reaction_eval, runs, tagging_eval
from evals.analysis import baselines
from evals.corpus.cases import ExplanationCase
from evals.corpus.words import content_words
from evals.engine.pipeline import Task
from tests.cli.test_compare import _offline, run_compare
from tests.recorded_runs import corpus_ids, record


def _mean(task: Task[Any], cases: list[Any], answer: Callable[[Any], str]) -> float:
    return sum(float(task.score_one(c, answer(c))["score"]) for c in cases) / len(cases)


def _word_list(k: int) -> Callable[[ExplanationCase], str]:
    """The audit's trick: "You: " and the first 13 interest words, refusing when fewer than k share the item."""

    def answer(case: ExplanationCase) -> str:
        shared = len(content_words(case.interests) & content_words(f"{case.title} {case.summary}"))
        said = "You: " + " ".join(case.interests.split()[:13]) if shared >= k else REFUSAL
        return json.dumps({"text": said})

    return answer


@pytest.mark.parametrize(
    ("module", "named"),
    [
        (tagging_eval, "the gold tags of the nearest of"),
        (explanation_eval, '"You follow <the interest words the item shares>."'),
        (reaction_eval, "verdict read when interests and item share at least"),
    ],
    ids=["tagging", "explanation", "reaction"],
)
def test_the_printed_floor_is_at_least_each_named_strategy_on_dev(module: Any, named: str) -> None:
    dev = module.load_cases(None, "dev")
    strategy = next(s for s in module.strategies(dev) if s.describe.startswith(named))
    floor = baselines.trivial(module.TASK, dev)
    assert floor is not None
    assert sum(floor.scores.values()) / len(dev) >= _mean(module.TASK, dev, strategy.answer) - 1e-12
    assert "train cases" in strategy.describe  # fitted on train, never on the cases it is scored on


def test_the_tagging_floor_is_the_nearest_train_case_and_beats_the_old_one() -> None:
    dev = tagging_eval.load_cases(None, "dev")
    floor = baselines.trivial(tagging_eval.TASK, dev)
    assert floor is not None and floor.answer.startswith("the gold tags of the nearest")
    assert sum(floor.scores.values()) / len(dev) > 0.3  # the audit measured 0.39; the old floor printed 0.15


def test_a_case_is_never_its_own_nearest_train_case() -> None:
    train = tagging_eval.load_cases(None, "train")
    nearest = next(s for s in tagging_eval.strategies(train) if s.describe.startswith("the gold tags of the nearest"))
    perfect = sum(tagging_eval.score_one(c, nearest.answer(c))["score"] == 1.0 for c in train)
    assert perfect < len(train) / 2  # looked up among the others: its own gold tags would give every case 1.0


def test_a_word_list_earns_nothing_on_a_match_case_and_no_more_than_the_stub() -> None:
    dev = explanation_eval.load_cases(None, "dev")
    stub = baselines.stub(explanation_eval.TASK, dev).scores
    listed = _word_list(1)
    for case in (c for c in dev if not c.refuse):
        scored = explanation_eval.score_one(case, listed(case))
        assert scored["score"] == 0.0 <= stub[case.id], case.id
        assert scored["errors"]  # no topic named, or (when it names one) "not a sentence"
    refusing = _mean(explanation_eval.TASK, dev, lambda c: json.dumps({"text": REFUSAL}))
    for k in range(1, 7):  # whatever its refusal rule, the words add nothing to what its refusals earn
        assert _mean(explanation_eval.TASK, dev, _word_list(k)) <= refusing
    assert _mean(explanation_eval.TASK, dev, _word_list(3)) <= sum(stub.values()) / len(dev) + 0.02  # was 0.71


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("You: palladium cross-coupling ligands kinetics", "a label and a colon before a list of words"),
        ("Your interests: palladium cross-coupling", "a label and a colon before a list of words"),
        ("palladium cross-coupling, ligands, kinetics", "a bare list of words"),
    ],
    ids=["you-colon", "label-colon", "bare-list"],
)
def test_no_sentence_shape_fails_the_sentence_check_with_its_own_error(text: str, error: str) -> None:
    case = next(c for c in explanation_eval.load_cases() if not c.refuse and "palladium" in c.must_mention_any)
    scored = explanation_eval.score_one(case, json.dumps({"text": text}))
    assert scored["score"] == 0.0 and len(scored["errors"]) == 1 and scored["errors"][0].startswith(error)


def test_two_sentences_cost_one_refinement_with_its_own_error() -> None:
    case = next(c for c in explanation_eval.load_cases() if not c.refuse and "palladium" in c.must_mention_any)
    text = "You run palladium cross-coupling. This ligand works cold."
    scored = explanation_eval.score_one(case, json.dumps({"text": text}))
    assert scored["errors"] == ["2 sentences; the prompt asks for one"]
    assert scored["score"] == pytest.approx(1 - (1 - explanation_eval.GATE) / explanation_eval.REFINEMENTS)


def test_a_model_that_does_not_beat_the_floor_is_named_in_the_report_page_and_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    stub = _offline(tagging_eval.TASK, cache, "--split", "dev")
    assert "the model does not beat the best cheap strategy" in capsys.readouterr().out
    page = tmp_path / "run.html"
    assert runs.main(["--cache-dir", str(cache), "show", stub, "--html", str(page)]) == 0
    assert "the model does not beat the best cheap strategy" in page.read_text(encoding="utf-8")
    ids = corpus_ids(tagging_eval.CORPUS)
    better = record(cache, tagging_eval.CORPUS, ids, model="oracle")  # no report block: no floor beside it
    out = run_compare(capsys, cache, stub, better)
    line = next(line for line in out.out.splitlines() if line.startswith("floor"))
    assert line.startswith("floor       0.39 beside the baseline (the gold tags of the nearest")
    assert line.endswith("the baseline does not beat the best cheap strategy")
    data = run_compare(capsys, cache, stub, better, "--json").json()
    assert data["floor"][0]["beaten"] is False and data["floor"][1] is None
