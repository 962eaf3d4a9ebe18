"""The tagging eval: F1 of predicted against gold tags."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attest.backends.types import Message
from attest.features import ItemTags, tag_messages
from evals.corpus.cases import TaggingCase
from evals.engine import execute, pipeline
from evals.engine.pipeline import CaseResult, EvalResult, SampleChat
from evals.engine.scoring import parse_or_error

__all__ = ["TASK", "dspy_fields", "evaluate", "load_cases", "score_one", "to_dspy_example"]

CORPUS = Path(__file__).with_name("tagging_cases.json")


def render(case: TaggingCase) -> list[Message]:
    return tag_messages(case.title, case.summary)


def score_one(case: TaggingCase, out: str) -> dict[str, Any]:
    """F1 of the answer's tags against the gold set; errors name missing and extra tags."""
    parsed, why = parse_or_error(out, ItemTags)
    if parsed is None:
        return {"id": case.id, "score": 0.0, "errors": [why], "predicted": []}
    assert isinstance(parsed, ItemTags)
    predicted, gold = set(parsed.tags), set(case.tags)
    hits = len(predicted & gold)
    f1 = 2 * hits / (len(predicted) + len(gold))
    errors = []
    if gold - predicted:
        errors.append(f"missing tags {sorted(gold - predicted)}: the item is also about these")
    if predicted - gold:
        errors.append(f"extra tags {sorted(predicted - gold)}: the item is not about these")
    return {"id": case.id, "score": f1, "errors": errors, "predicted": sorted(predicted)}


TASK = pipeline.Task("tagging", TaggingCase, ItemTags, CORPUS, render, score_one)


def load_cases(path: Path | None = None, split: str | None = None) -> list[TaggingCase]:
    return pipeline.load_cases(TASK, path, split)


def evaluate(
    chat_json: SampleChat,
    cases: Sequence[TaggingCase],
    *,
    repeat: int = 1,
    on_case: Callable[[CaseResult], None] | None = None,
) -> EvalResult:
    return execute.evaluate(TASK, chat_json, cases, repeat=repeat, on_case=on_case)


def dspy_fields() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return ("title", "summary"), ("tags",)


def to_dspy_example(case: TaggingCase) -> dict[str, Any]:
    """Inputs and gold outputs by field name, plus the case itself (for the metric)."""
    return {"title": case.title, "summary": case.summary, "tags": list(case.tags), "case": case}
