"""The baselines a model must beat, scored on a run's own cases by the task's own `score_one`.

- `stub`: attest's StubBackend (keyword overlap between reader and item), run in
  process through `evals.engine.execute.evaluate`: no network, nothing on disk, one sample
  per case (it is deterministic).
- `trivial`: the best constant answer, one JSON text sent for every case, chosen among
  a few candidates built from the cases' labels. Reaction: the majority class of the
  cases' verdicts. Tagging: each of the three most frequent gold tags alone, and the
  top two and top three together. Explanation: the exact refusal, a generic
  sentence, and one naming the most frequent shared topic.

A constant answer is chosen on the cases it is scored on, as a majority class always
is: it is the best a model that ignores its input could do on these cases, so a model
that does not beat it has learnt nothing from the input.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from attest.backends.stub import StubBackend
from attest.vocab import REFUSAL
from evals.corpus.cases import AnyCase, ExplanationCase, ReactionCase, TaggingCase
from evals.engine.execute import evaluate
from evals.engine.pipeline import Task, unsampled
from evals.reaction_eval import UNREASONED

__all__ = ["Baseline", "Candidate", "baselines", "best_constant", "candidates", "majority_verdict", "stub", "trivial"]

GENERIC_EXPLANATION = "You may find this relevant to your work."
CONSTANT_REASONING = "Judged from the reader's stated interests alone."


@dataclass(frozen=True)
class Candidate:
    """A constant answer: the raw text sent for every case, and what it is, in prose."""

    text: str
    describe: str


@dataclass(frozen=True)
class Baseline:
    """A baseline's score on each case (by id), and what it answered."""

    name: str  # "stub" or "trivial"
    answer: str  # in prose: "the stub backend (keyword overlap)", "always verdict false (...)"
    scores: dict[str, float]


def stub(task: Task[Any], cases: Sequence[AnyCase]) -> Baseline:
    """The stub backend's score on `cases`: the production renderer, the task's scorer, in memory."""
    backend = StubBackend()
    result = evaluate(task, unsampled(backend.chat_json), cases)
    return Baseline("stub", f"the stub backend, {backend.model}: keyword overlap of reader and item", result.by_case())


def best_constant(task: Task[Any], cases: Sequence[AnyCase], options: Sequence[Candidate]) -> Baseline:
    """The candidate whose constant answer scores best on `cases` by `task.score_one` (the first on a tie)."""
    if not options or not cases:
        raise ValueError("best_constant needs at least one candidate and one case")
    scored = [(c, {case.id: float(task.score_one(case, c.text)["score"]) for case in cases}) for c in options]
    best, scores = max(scored, key=lambda pair: sum(pair[1].values()))  # max keeps the first of equals
    also = f"; the best of {len(options)} constant answers" if len(options) > 1 else ""
    return Baseline("trivial", f"{best.describe}{also}", scores)


def majority_verdict(cases: Sequence[ReactionCase]) -> tuple[bool, int]:
    """The more frequent label among `cases` and how many cases carry it; a tie gives False (skip)."""
    yes = sum(1 for c in cases if c.verdict)
    return (True, yes) if yes > len(cases) - yes else (False, len(cases) - yes)


def _reaction(cases: Sequence[ReactionCase]) -> list[Candidate]:
    verdict, count = majority_verdict(cases)
    text = json.dumps({"verdict": verdict, "confidence": 3, "reasoning": CONSTANT_REASONING})
    word = "true (read)" if verdict else "false (skip)"
    describe = f"always verdict {word}: the majority class, {count} of {len(cases)} labels"
    why = f"a constant reasoning cannot name each item, so a right verdict mostly earns {UNREASONED}"
    return [Candidate(text, f"{describe}; {why}")]


def _tagging(cases: Sequence[TaggingCase]) -> list[Candidate]:
    ranked = [tag for tag, _ in Counter(tag for c in cases for tag in c.tags).most_common(3)]
    sets = [[tag] for tag in ranked] + [ranked[:k] for k in (2, 3) if len(ranked) >= k]
    return [Candidate(json.dumps({"tags": s}), f"always tags {json.dumps(s)}") for s in sets]


def _explanation(cases: Sequence[ExplanationCase]) -> list[Candidate]:
    options = [
        Candidate(json.dumps({"text": REFUSAL}), f"always the exact refusal {REFUSAL!r}"),
        Candidate(json.dumps({"text": GENERIC_EXPLANATION}), f"always {GENERIC_EXPLANATION!r}"),
    ]
    topics = Counter(t.lower() for c in cases if not c.refuse for t in c.must_mention_any).most_common(1)
    if topics:
        sentence = f"This matches your interest in {topics[0][0]}."
        options.append(Candidate(json.dumps({"text": sentence}), f"always {sentence!r}"))
    return options


_CANDIDATES: dict[str, Callable[[Sequence[Any]], list[Candidate]]] = {
    "reaction": _reaction,
    "tagging": _tagging,
    "explanation": _explanation,
}


def candidates(task_name: str, cases: Sequence[AnyCase]) -> list[Candidate]:
    """The constant answers tried for this task, built from the labels of `cases`; none for an unknown task."""
    build = _CANDIDATES.get(task_name)
    return build(cases) if build is not None and cases else []


def trivial(task: Task[Any], cases: Sequence[AnyCase]) -> Baseline | None:
    """The best constant answer's score on `cases`, or None when the task has no candidates."""
    options = candidates(task.name, cases)
    return best_constant(task, cases, options) if options else None


def baselines(task: Task[Any], cases: Sequence[AnyCase]) -> list[Baseline]:
    """The stub's and the trivial baseline's scores on exactly `cases`."""
    found = [stub(task, cases), trivial(task, cases)]
    return [b for b in found if b is not None]
