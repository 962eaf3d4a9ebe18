"""The reaction eval: verdict against the label, a reason that names the item, and
the numbers a persona simulation is judged by (precision, recall, ROC-AUC, the
confidence histogram). `score_verdicts` is defined here, once; `gate` is tagging_eval's."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from attest.backends.stub import reaction_answer
from attest.backends.types import Message
from attest.simulate import Reaction, reaction_messages
from evals.corpus.cases import ReactionCase
from evals.corpus.fixture import fixture_problems
from evals.corpus.rules import reaction_rules
from evals.corpus.targets import reaction_targets
from evals.corpus.words import content_words
from evals.engine import execute, floors, pipeline
from evals.engine.chat import SampleChat
from evals.engine.pipeline import CaseResult, EvalResult
from evals.engine.scoring import names_item, parse_or_error
from evals.engine.task import CheckContext, CorpusChecks, DspyAdapter, Scored, Strategy, Task
from evals.tagging_eval import gate

__all__ = [
    "TASK",
    "dspy_fields",
    "evaluate",
    "gate",
    "load_cases",
    "roc_auc",
    "score_one",
    "score_verdicts",
    "strategies",
    "to_dspy_example",
]

CORPUS = Path(__file__).with_name("reaction_cases.json")
# a right verdict whose reasoning does not name the item, or names none of the reader's interests (the prompt:
# "one sentence that names the item's topic and the interest it meets or misses"), earns this much
UNREASONED = 0.75


def render(case: ReactionCase) -> list[Message]:
    return reaction_messages(case.persona, case.interests, case.title, case.summary)


class ReactionScored(Scored):
    verdict: bool | None  # None: the answer was not valid
    confidence: int | None


def score_one(case: ReactionCase, out: str) -> ReactionScored:
    """1 for the right verdict with a reason naming the item; less without the reason; 0 if wrong."""
    parsed, why = parse_or_error(out, Reaction)
    if parsed is None:
        return {"id": case.id, "score": 0.0, "errors": [why], "verdict": None, "confidence": None}
    assert isinstance(parsed, Reaction)
    errors = []
    if parsed.verdict != case.verdict:
        errors.append(f"verdict {parsed.verdict} but this persona would {'read' if case.verdict else 'skip'} the item")
    named = names_item(case.title, parsed.reasoning)
    if not named:
        errors.append("the reasoning does not name the item: it mentions no content word of the title")
    meets = bool(content_words(case.interests) & content_words(parsed.reasoning))
    if not meets:
        errors.append("the reasoning names none of the reader's interests: say which of them the item meets or misses")
    score = 0.0 if parsed.verdict != case.verdict else (1.0 if named and meets else UNREASONED)
    return {"id": case.id, "score": score, "errors": errors, "verdict": parsed.verdict, "confidence": parsed.confidence}


def roc_auc(labels: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Probability that a random positive outscores a random negative (ties count half); None if undefined.

    Computed from ranks (Mann-Whitney U), so it costs n log n, not positives x negatives.
    """
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return None
    ordered = sorted(zip(scores, labels, strict=True), key=lambda pair: pair[0])
    rank_sum, i = 0.0, 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        average_rank = (i + 1 + j) / 2  # ranks i+1..j share their mean
        rank_sum += average_rank * sum(1 for _, y in ordered[i:j] if y)
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def score_verdicts(labels: Sequence[bool], verdicts: Sequence[bool], confidences: Sequence[int]) -> dict[str, Any]:
    """Precision and recall of the verdicts; ROC-AUC of verdict and of signed confidence against the labels.

    The confidence AUC is None (n/a) when the confidence never varies: then it says
    nothing beyond the verdict.
    """
    tp = sum(v and y for v, y in zip(verdicts, labels, strict=True))
    predicted, actual = sum(verdicts), sum(labels)
    signed = [c if v else -c for v, c in zip(verdicts, confidences, strict=True)]
    return {
        "n": len(labels),
        "precision": tp / predicted if predicted else None,
        "recall": tp / actual if actual else None,
        "auc_verdict": roc_auc(labels, [float(v) for v in verdicts]),
        "auc_confidence": roc_auc(labels, [float(s) for s in signed]) if len(set(confidences)) > 1 else None,
    }


def summarise(cases: Sequence[ReactionCase], results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The verdict metrics over every answer, and the confidence histogram by verdict.

    An invalid answer counts as the wrong verdict (a false negative on a positive
    case, a false positive on a negative one), so failing to answer never raises
    precision or recall. The confidence AUC ranks only the answers that carry a
    confidence; the histogram counts them too, and `invalid` says how many did not.
    """
    label = {c.id: c.verdict for c in cases}
    labels = [label[r["id"]] for r in results]
    verdicts = [r["verdict"] if r.get("verdict") is not None else not y for r, y in zip(results, labels, strict=True)]
    valid = [r for r in results if r.get("verdict") is not None]
    metrics = score_verdicts(labels, verdicts, [r.get("confidence") or 1 for r in results])
    on_valid = score_verdicts(
        [label[r["id"]] for r in valid], [r["verdict"] for r in valid], [r["confidence"] for r in valid]
    )
    histogram = Counter(f"{'yes' if r['verdict'] else 'no'}-{r['confidence']}" for r in valid)
    return {
        **metrics,
        "auc_confidence": on_valid["auc_confidence"],
        "invalid": len(results) - len(valid),
        "confidence_histogram": dict(sorted(histogram.items())),
    }


CONSTANT_REASONING = "Judged from the reader's stated interests alone."


def strategies(cases: Sequence[ReactionCase]) -> list[Strategy[ReactionCase]]:
    """A constant verdict, yes or no, with the item's title pasted as the reasoning (which names the item),
    or with one fixed reasoning."""
    found: list[Strategy[ReactionCase]] = []
    for verdict in (False, True):
        word = "true (read)" if verdict else "false (skip)"
        found.append(Strategy(f"always verdict {word}, the item's title as the reasoning", _titled(verdict)))
        text = json.dumps({"verdict": verdict, "confidence": 3, "reasoning": CONSTANT_REASONING})
        found.append(Strategy.constant(text, f"always verdict {word} with one fixed reasoning"))
    return [*found, floors.word_overlap_verdict(_train(), score_one)]


@functools.cache
def _train() -> tuple[ReactionCase, ...]:
    """The corpus's train split: where the word-overlap floor chooses its threshold."""
    return tuple(load_cases(CORPUS, "train"))


def _titled(verdict: bool) -> Callable[[ReactionCase], str]:
    return lambda case: json.dumps({"verdict": verdict, "confidence": 3, "reasoning": case.title})


def verdict_metrics(cases: Sequence[ReactionCase], results: Sequence[CaseResult]) -> dict[str, Any]:
    """The report's precision and recall rows, with Wilson intervals, over every sample."""
    from evals.analysis.uncertainty import verdicts  # statistics (scipy) only when the report is computed

    return {"verdicts": verdicts({c.id: c.verdict for c in cases}, results)}


def dspy_fields() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return ("persona", "interests", "title", "summary"), ("verdict",)


def to_dspy_example(case: ReactionCase) -> dict[str, Any]:
    inputs = {"persona": case.persona, "interests": case.interests, "title": case.title, "summary": case.summary}
    return {**inputs, "verdict": case.verdict, "case": case}


def _verdict_counts(cases: Sequence[ReactionCase]) -> list[str]:
    values = [case.verdict for case in cases]
    return [str(values.count(True)), str(values.count(False))]


def _rules(path: Path, cases: Sequence[ReactionCase], context: CheckContext) -> Iterable[str]:
    yield from reaction_rules(path, cases)
    yield from fixture_problems(path, cases, context.fixture)


TASK = Task(
    "reaction",
    ReactionCase,
    Reaction,
    CORPUS,
    render,
    score_one,
    summarise,
    strategies=strategies,
    interval="bootstrap",  # graded: a right verdict without the item named earns UNREASONED
    verdict_metrics=verdict_metrics,
    stub_answer=reaction_answer,
    dspy=DspyAdapter(dspy_fields(), to_dspy_example),
    checks=CorpusChecks(("verdict=true", "verdict=false"), _verdict_counts, _rules, reaction_targets),
)


def load_cases(path: Path | None = None, split: str | None = None) -> list[ReactionCase]:
    return pipeline.load_cases(TASK, path, split)


def evaluate(
    chat_json: SampleChat,
    cases: Sequence[ReactionCase],
    *,
    repeat: int = 1,
    on_case: Callable[[CaseResult], None] | None = None,
) -> EvalResult:
    return execute.evaluate(TASK, chat_json, cases, repeat=repeat, on_case=on_case)
