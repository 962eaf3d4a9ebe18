"""The explanation eval: the exact refusal when nothing matches; otherwise a short
sentence to "you" that names a shared topic, with no preamble."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attest.backends.types import Message
from attest.explain import REFUSAL, Explanation, explanation_messages
from evals import execute, pipeline
from evals.cases import ExplanationCase
from evals.pipeline import CaseResult, EvalResult, SampleChat
from evals.scoring import parse_or_error
from evals.tagging_eval import gate

__all__ = ["TASK", "dspy_fields", "evaluate", "gate", "load_cases", "score_one", "to_dspy_example"]

CORPUS = Path(__file__).with_name("explanation_cases.json")
MAX_WORDS = 15  # the prompt asks for fewer than fifteen words
PREAMBLES = ("you will find", "this item")
_YOU = re.compile(r"\byou(r|rs)?\b", re.IGNORECASE)


def render(case: ExplanationCase) -> list[Message]:
    return explanation_messages(case.interests, case.title, case.summary)


def score_one(case: ExplanationCase, out: str) -> dict[str, Any]:
    """Refusal cases: 1 only for the exact refusal. Others: the share of the four checks passed."""
    parsed, why = parse_or_error(out, Explanation)
    if parsed is None:
        return {"id": case.id, "score": 0.0, "errors": [why], "refused": None}
    assert isinstance(parsed, Explanation)
    text = parsed.text.strip()
    refused = text == REFUSAL
    if case.refuse:
        errors = (
            [] if refused else [f"no stated interest matches, so the answer must be exactly {REFUSAL!r}; got {text!r}"]
        )
        return {"id": case.id, "score": float(refused), "errors": errors, "refused": refused}
    if refused:
        return {
            "id": case.id,
            "score": 0.0,
            "errors": [f"refused, but the item shares {case.must_mention_any}"],
            "refused": True,
        }
    errors = _explanation_errors(case, text)
    return {"id": case.id, "score": 1.0 - len(errors) / 4, "errors": errors, "refused": False}


def _explanation_errors(case: ExplanationCase, text: str) -> list[str]:
    lowered = text.lower()
    errors = []
    if not any(word.lower() in lowered for word in case.must_mention_any):
        errors.append(f"names none of the shared topics {case.must_mention_any}")
    words = len(text.split())
    if words >= MAX_WORDS:
        errors.append(f"{words} words; it must be under {MAX_WORDS}")
    if not _YOU.search(text):
        errors.append('does not address the reader as "you"')
    if lowered.startswith(PREAMBLES):
        errors.append(f"opens with a preamble ({text.split()[0]} {text.split()[1]} ...); start with the reason")
    return errors


def summarise(cases: Sequence[ExplanationCase], results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How often the model refused where it should and where it should not."""
    must = {c.id: c.refuse for c in cases}
    refused = [r for r in results if r.get("refused") is not None]
    return {
        "refusals_correct": sum(1 for r in refused if must[r["id"]] and r["refused"]),
        "refusals_expected": sum(1 for r in refused if must[r["id"]]),
        "false_refusals": sum(1 for r in refused if not must[r["id"]] and r["refused"]),
        "invalid": len(results) - len(refused),
    }


TASK = pipeline.Task("explanation", ExplanationCase, Explanation, CORPUS, render, score_one, summarise)


def load_cases(path: Path | None = None, split: str | None = None) -> list[ExplanationCase]:
    return pipeline.load_cases(TASK, path, split)


def evaluate(
    chat_json: SampleChat,
    cases: Sequence[ExplanationCase],
    *,
    repeat: int = 1,
    on_case: Callable[[CaseResult], None] | None = None,
) -> EvalResult:
    return execute.evaluate(TASK, chat_json, cases, repeat=repeat, on_case=on_case)


def dspy_fields() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return ("interests", "title", "summary"), ("refuse", "must_mention_any")


def to_dspy_example(case: ExplanationCase) -> dict[str, Any]:
    inputs = {"interests": case.interests, "title": case.title, "summary": case.summary}
    return {**inputs, "refuse": case.refuse, "must_mention_any": list(case.must_mention_any), "case": case}
