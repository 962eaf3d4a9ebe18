"""The genre task: is a research-feed item a review of others' work, or original research?

Everything a task is, in one module: the case model, the output schema, the renderer (the
one place the prompt is built), the pure scorer, the stub backend's answerer, the cheap
strategies a trivial baseline picks from, and the corpus rules `corpus_check` runs. attest
finds `TASK` through the `attest.tasks` entry point in this package's pyproject.toml.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from attest.backends.types import Message
from evals.corpus.cases import Case, NonEmpty
from evals.engine.scoring import parse_or_error
from evals.engine.task import CheckContext, CorpusChecks, Scored, Strategy, Task

__all__ = ["SYSTEM", "TASK", "GenreAnswer", "GenreCase", "render", "score_one", "stub_answer"]

Kind = Literal["review", "research"]
# anchor: a plain item of either kind; keyword-trap: original research whose title or summary uses a review
# word for something else (peer review, a survey instrument, product reviews); hidden-review: a review that
# never calls itself one; borderline: the kinds the prompt has to decide (meta-analyses, perspectives and
# tutorials are reviews; benchmarks and reproductions run new experiments, so they are research).
Family = Literal["anchor", "keyword-trap", "hidden-review", "borderline"]

SYSTEM = (
    "You sort research-feed items by the kind of paper they are.\n"
    'A "review" surveys, synthesises or assesses work others published: narrative and systematic reviews, '
    "meta-analyses of published studies, surveys of a field, tutorials, and perspectives that argue from "
    "the literature.\n"
    'A "research" item reports work of its own: new experiments, methods, models, tools, datasets, '
    "benchmarks or theory, even when its topic is reviewing (peer review, product reviews) or its "
    "instrument is a survey.\n"
    'Answer in JSON: {"kind": "review"} or {"kind": "research"}.'
)
CORPUS = Path(__file__).with_name("genre_cases.json")


class GenreCase(Case):
    """One item and its kind; `note` names the failure the case targets."""

    family: Family
    title: NonEmpty
    summary: NonEmpty
    kind: Kind


class GenreAnswer(BaseModel):
    """What the model answers."""

    model_config = ConfigDict(extra="forbid", title="GenreAnswer")

    kind: Kind


class GenreScored(Scored):
    predicted: Kind | None  # None: the answer was not valid


def render(case: GenreCase) -> list[Message]:
    """The task's prompt: the instructions, then the item as labelled lines."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Title: {case.title}\nSummary: {case.summary}"},
    ]


def score_one(case: GenreCase, out: str) -> GenreScored:
    """1 for the right kind, 0 otherwise; the error says which kind and why."""
    parsed, why = parse_or_error(out, GenreAnswer)
    if parsed is None:
        return {"id": case.id, "score": 0.0, "errors": [why], "predicted": None}
    if parsed.kind == case.kind:
        return {"id": case.id, "score": 1.0, "errors": [], "predicted": parsed.kind}
    reason = (
        "it synthesises or assesses work others published"
        if case.kind == "review"
        else "it reports work of its own, whatever words its title uses"
    )
    error = f"answered {parsed.kind!r}, but the item is {case.kind!r}: {reason}"
    return {"id": case.id, "score": 0.0, "errors": [error], "predicted": parsed.kind}


_REVIEW_WORDS = re.compile(r"\b(reviews?|reviewing|survey|overview|meta-analysis|perspective|tutorial)\b", re.I)


def stub_answer(messages: Sequence[Message], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The offline model: "review" when the item uses a review word anywhere, else "research"."""
    prompt = messages[-1]["content"] if messages else ""
    return {"kind": "review" if _REVIEW_WORDS.search(prompt) else "research"}


def strategies(cases: Sequence[GenreCase]) -> list[Strategy[GenreCase]]:
    """Always one kind: the trivial baseline is the larger class's share."""
    return [Strategy.constant(json.dumps({"kind": k}), f"always {k}") for k in ("research", "review")]


def _kinds(cases: Sequence[GenreCase]) -> list[str]:
    return [str(sum(c.kind == k for c in cases)) for k in ("review", "research")]


def rules(path: Path, cases: Sequence[GenreCase], context: CheckContext) -> Iterable[str]:
    """Each split holds both kinds; a keyword trap is research and a hidden review a review, by definition."""
    for split in ("train", "dev"):
        found = {c.kind for c in cases if c.split == split}
        if found != {"review", "research"}:
            yield f"{path}: split {split}: field 'kind': holds only {sorted(found)}; add a case of the other kind"
    wanted = {"keyword-trap": "research", "hidden-review": "review"}
    for case in cases:
        if case.family in wanted and case.kind != wanted[case.family]:
            yield (
                f"{path}: case {case.id}: field 'kind': a {case.family} case is {wanted[case.family]!r} "
                "by its family; fix the kind or the family"
            )


TASK: Task[GenreCase] = Task(
    "genre",
    GenreCase,
    GenreAnswer,
    CORPUS,
    render,
    score_one,
    strategies=strategies,
    interval="wilson",  # 0 or 1 by construction
    stub_answer=stub_answer,
    checks=CorpusChecks(("review", "research"), _kinds, rules),
)
