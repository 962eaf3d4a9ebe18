"""What the tagging optimiser's search needs besides DSPy: the budget, the prompt, the metric, the gate's runs.

This module never imports dspy (the design note: nothing under evals/ other than
optimize_tagging.py imports dspy). evals/optimize_tagging.py holds the DSPy side (the
LM, the adapter, the signature and the bootstrap) and calls these with what DSPy gives it:
`BudgetedChat` makes at most `--budget` model calls through attest's backend and response
cache (cache hits free); `prompt_from` turns a predictor's instructions and demos into the
`TagPrompt` that ships; `parse_tags` reads an answer as attest does; `run_prompt` records a
run of the tagging task with a given prompt, which the gate pairs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attest.answers import parse_answer, schema_of
from attest.backends.types import BackendError, ChatResponse, Message
from attest.errors import AttestError
from attest.features import DEFAULT_TAG_INSTRUCTIONS, ItemTags, TagDemo, TagPrompt, tag_messages
from evals.corpus.cases import TaggingCase
from evals.engine.chat import CachedChat, SampleChat
from evals.engine.execute import RunOutcome, RunSpec, execute, with_render
from evals.engine.execute import evaluate as execute_evaluate
from evals.engine.pipeline import EvalResult
from evals.engine.progress import stderr_progress
from evals.store.keys import request_key
from evals.store.protocols import Runs
from evals.tagging_eval import TASK, load_cases, score_one

__all__ = [
    "BASELINE",
    "SCHEMA",
    "BudgetExceeded",
    "BudgetedChat",
    "Search",
    "SearchStopped",
    "evaluate_prompt",
    "metric",
    "parse_tags",
    "prompt_from",
    "prompt_task",
    "run_prompt",
    "train_sample",
]

SCHEMA = schema_of(ItemTags)
BASELINE = TagPrompt(instructions=DEFAULT_TAG_INSTRUCTIONS)  # the shipped default prompt


class BudgetExceeded(AttestError):
    """The optimiser asked for a model call beyond --budget."""


# --- the model side: attest's backend and cache, within the budget ---------------------


class SearchStopped(BaseException):
    """Carries a backend failure out of DSPy's bootstrap loop, which catches every Exception per example."""


class BudgetedChat:
    """A SampleChat over a CachedChat that makes at most `limit` model calls; cache hits are free.

    A request beyond the budget raises BudgetExceeded without reaching the model (DSPy
    counts it as a failed example and goes on). A BackendError is kept in `.failure` and
    stops the whole search at once (SearchStopped), rather than being retried on every
    remaining example.
    """

    def __init__(self, chat: CachedChat, limit: int) -> None:
        self.chat = chat
        self.limit = limit
        self.refused = 0
        self.failure: BackendError | None = None

    @property
    def calls(self) -> int:
        return self.chat.calls

    def __call__(self, messages: Sequence[Message], schema: Mapping[str, Any], sample: int) -> ChatResponse:
        key = request_key(self.chat.identity, messages, schema, sample)
        if self.chat.calls >= self.limit and self.chat.cache.get(key) is None:
            self.refused += 1
            raise BudgetExceeded(f"the budget of {self.limit} model calls is spent; this request was not sent")
        try:
            return self.chat.fetch(key, messages, schema, sample)[0]
        except BackendError as exc:
            self.failure = exc
            raise SearchStopped from exc


# --- the prompt: what a predictor holds, as the prompt that ships ------------------------


def prompt_from(instructions: str, demos: Sequence[Any]) -> TagPrompt:
    """A predictor's instructions and demos (dspy Examples or dicts) as the prompt that ships."""
    return TagPrompt(
        instructions=instructions,
        demos=tuple(TagDemo(title=d["title"], summary=d["summary"], tags=list(d["tags"])) for d in demos),
    )


def parse_tags(completion: str) -> dict[str, Any]:
    """The answer's tags as the predictor's outputs; raises ModelOutputError as attest does on a bad answer."""
    return {"tags": list(parse_answer(completion, ItemTags).tags)}


def metric(example: Any, prediction: Any, trace: object = None) -> float:
    """F1 from the eval's own scorer, on the parsed answer (DSPy's metric signature)."""
    return float(score_one(example.case, json.dumps({"tags": prediction.tags}))["score"])


def train_sample(train: Sequence[TaggingCase], limit: int, seed: int) -> list[TaggingCase]:
    """The train cases the bootstrap may try: at most `limit` (one model call each), chosen by `seed`."""
    if any(c.split != "train" for c in train):
        raise ValueError("the optimiser sees train cases only")
    return random.Random(seed).sample(list(train), min(limit, len(train)))


@dataclass(frozen=True)
class Search:
    """What the optimiser chose, and what it tried."""

    prompt: TagPrompt
    tried: list[str]  # the ids of the train cases the bootstrap could try
    bootstrapped: int  # demos the model tagged exactly right (the rest are labelled cases)
    refused: int  # requests refused because the budget was spent


# --- the gate: both prompts on the judged split, paired --------------------------------------------


def evaluate_prompt(chat: SampleChat, cases: Sequence[TaggingCase], prompt: TagPrompt) -> EvalResult:
    """The tagging eval with `prompt` passed to `tag_messages` explicitly.

    The prompt goes in through a copy of TASK with its renderer bound to `prompt`, not
    through ATTEST_TAG_PROMPT: no process-wide state changes, and the baseline is the
    shipped default whatever the environment says. `tag_messages(..., prompt=p)` is what
    `tag_messages(...)` renders when ATTEST_TAG_PROMPT names p's file, so the candidate's
    dev requests are the ones the artifact makes in production (a test re-scores them from
    the cache with ATTEST_TAG_PROMPT set).
    """

    return execute_evaluate(prompt_task(prompt), chat, cases)


def prompt_task(prompt: TagPrompt) -> Any:
    """TASK with its renderer bound to `prompt`."""

    def render(case: TaggingCase) -> list[Message]:
        return tag_messages(case.title, case.summary, prompt=prompt)

    return with_render(TASK, render)


def run_prompt(
    chat: CachedChat,
    store: Runs,
    cases: Sequence[TaggingCase],
    prompt: TagPrompt,
    label: str,
    *,
    split: str = "dev",
) -> RunOutcome:
    """A recorded run of the tagging task with `prompt` on `cases` (one split): compare reads it back."""
    spec = RunSpec(prompt_task(prompt), cases, load_cases(), TASK.corpus, split, 1, label=label)
    return execute(spec, chat, store, progress=stderr_progress(f"{label} on {split}"))
