"""The tagging eval: F1 of predicted against gold tags.

`gate()` is defined here, once: the paired verdict between two recorded runs, which
reaction_eval and explanation_eval import (not copy) and the optimiser ships on.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attest.backends.stub import tags_answer
from attest.backends.types import Message
from attest.features import ItemTags, tag_messages
from evals.corpus.cases import TaggingCase
from evals.corpus.rules import tagging_rules
from evals.corpus.targets import tagging_targets
from evals.engine import execute, floors, pipeline, provenance
from evals.engine.chat import SampleChat
from evals.engine.pipeline import CaseResult, EvalResult
from evals.engine.scoring import parse_or_error
from evals.engine.task import CheckContext, CorpusChecks, DspyAdapter, Scored, Strategy, Task
from evals.store.models import Decision
from evals.store.protocols import Runs

if TYPE_CHECKING:
    from evals.analysis.pairing import Run

__all__ = ["TASK", "dspy_fields", "evaluate", "gate", "load_cases", "score_one", "strategies", "to_dspy_example"]

CORPUS = Path(__file__).with_name("tagging_cases.json")


def render(case: TaggingCase) -> list[Message]:
    return tag_messages(case.title, case.summary)


class TaggingScored(Scored):
    predicted: list[str]  # the answer's tags, sorted


def score_one(case: TaggingCase, out: str) -> TaggingScored:
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


def strategies(cases: Sequence[TaggingCase]) -> list[Strategy[TaggingCase]]:
    """The most frequent gold tags: each of the top three alone, and the top two and three together; and the
    gold tags of the nearest train case (word overlap on title and summary)."""
    ranked = [tag for tag, _ in Counter(tag for c in cases for tag in c.tags).most_common(3)]
    sets = [[tag] for tag in ranked] + [ranked[:k] for k in (2, 3) if len(ranked) >= k]
    found = [Strategy.constant(json.dumps({"tags": s}), f"always tags {json.dumps(s)}") for s in sets]
    return [*found, floors.nearest_train_tags(_train())]


@functools.cache
def _train() -> tuple[TaggingCase, ...]:
    """The corpus's train split: what the nearest-case floor may read."""
    return tuple(load_cases(CORPUS, "train"))


def tag_prompt() -> Mapping[str, str | None]:
    """The ATTEST_TAG_PROMPT artifact the run's prompts were rendered with (path and sha256), if any."""
    path, sha = provenance.tag_prompt_ref()
    return {"tag_prompt_path": path, "tag_prompt_sha256": sha}


def dspy_fields() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return ("title", "summary"), ("tags",)


def to_dspy_example(case: TaggingCase) -> dict[str, Any]:
    """Inputs and gold outputs by field name, plus the case itself (for the metric)."""
    return {"title": case.title, "summary": case.summary, "tags": list(case.tags), "case": case}


def _tag_count(cases: Sequence[TaggingCase]) -> list[str]:
    return [str(len({tag for case in cases for tag in case.tags}))]


def _rules(path: Path, cases: Sequence[TaggingCase], context: CheckContext) -> Iterable[str]:
    return tagging_rules(path, cases)


TASK = Task(
    "tagging",
    TaggingCase,
    ItemTags,
    CORPUS,
    render,
    score_one,
    strategies=strategies,
    interval="bootstrap",  # F1 is graded
    provenance=tag_prompt,
    stub_answer=tags_answer,
    dspy=DspyAdapter(dspy_fields(), to_dspy_example),
    checks=CorpusChecks(("tags",), _tag_count, _rules, tagging_targets),
)


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


def gate(store: Runs, base: Run, cand: Run, *, margin: float = 0.0) -> Decision:
    """The paired verdict of `cand` against `base` (evals.analysis.pairing.decide), recorded beside the
    candidate run as `decision` and returned: ship only when the whole interval clears `margin`."""
    from evals.analysis.pairing import decide  # statistics (scipy) only when a decision is taken

    decision = decide(base, cand, margin=margin)[1]
    store.save(cand.run_id, "decision", decision)
    return decision
