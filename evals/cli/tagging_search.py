"""The tagging optimiser's search: DSPy's BootstrapFewShot, wired to attest's renderer, cache and budget.

DSPy's `Predict` runs through `TagPromptAdapter`, which renders every request with
`attest.features.tag_messages` (the predictor's instructions and demos become a
`TagPrompt`) and parses the answer with `parse_answer`: DSPy's own prompt format never
reaches the model. The adapter asks `AttestLM`, whose calls go through attest's backend
and response cache (`BudgetedChat`: at most `--budget` model calls, cache hits free).
`run_prompt` records a run of the tagging task with a given prompt, which the gate pairs.
With evals/optimize_tagging.py (the command line) the only modules under evals/ that
import dspy.
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dspy

from attest.answers import ModelOutputError, parse_answer, schema_of
from attest.backends.types import BackendError, ChatResponse, Message
from attest.errors import AttestError
from attest.features import DEFAULT_TAG_INSTRUCTIONS, ItemTags, TagDemo, TagPrompt, tag_messages
from evals.corpus.cases import TaggingCase
from evals.engine.chat import CachedChat, SampleChat
from evals.engine.execute import RunOutcome, RunSpec, execute, with_render
from evals.engine.execute import evaluate as execute_evaluate
from evals.engine.pipeline import EvalResult
from evals.engine.progress import stderr_progress
from evals.store.local.cache import request_key
from evals.store.protocols import Runs
from evals.tagging_eval import TASK, dspy_fields, load_cases, score_one, to_dspy_example

__all__ = [
    "AttestLM",
    "BudgetExceeded",
    "BudgetedChat",
    "Search",
    "TagPromptAdapter",
    "evaluate_prompt",
    "prompt_from",
    "prompt_task",
    "run_prompt",
    "search",
    "tag_signature",
]

SCHEMA = schema_of(ItemTags)
BASELINE = TagPrompt(instructions=DEFAULT_TAG_INSTRUCTIONS)  # the shipped default prompt


class BudgetExceeded(AttestError):
    """The optimiser asked for a model call beyond --budget."""


# --- the model side: attest's backend and cache behind a DSPy LM ----------------------


class _SearchStopped(BaseException):
    """Carries a backend failure out of DSPy's bootstrap loop, which catches every Exception per example."""


class BudgetedChat:
    """A SampleChat over a CachedChat that makes at most `limit` model calls; cache hits are free.

    A request beyond the budget raises BudgetExceeded without reaching the model (DSPy
    counts it as a failed example and goes on). A BackendError is kept in `.failure` and
    stops the whole search at once, rather than being retried on every remaining example.
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
            raise _SearchStopped from exc


class AttestLM(dspy.BaseLM):  # type: ignore[misc]
    """The LM DSPy sees. Only TagPromptAdapter calls it, through `answer`; DSPy's own
    request path (`forward`) and cache are never used."""

    def __init__(self, chat: SampleChat, name: str) -> None:
        super().__init__(model=name, cache=False)
        self.chat = chat

    def answer(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> str:
        """The model's raw answer to a rendered request (sample 0)."""
        return self.chat(messages, schema, 0).text


def prompt_from(instructions: str, demos: Sequence[Any]) -> TagPrompt:
    """A predictor's instructions and demos (dspy Examples or dicts) as the prompt that ships."""
    return TagPrompt(
        instructions=instructions,
        demos=tuple(TagDemo(title=d["title"], summary=d["summary"], tags=list(d["tags"])) for d in demos),
    )


class TagPromptAdapter(dspy.Adapter):  # type: ignore[misc]
    """Render DSPy's tagging calls with `tag_messages` and parse the answers as attest does.

    `lm_kwargs` are ignored: the backend's options (temperature 0, a fixed seed) come from
    Settings and are part of the cache key, and the bootstrap runs one round, so DSPy never
    asks for another temperature.
    """

    def __call__(
        self,
        lm: Any,
        lm_kwargs: dict[str, Any],
        signature: Any,
        demos: list[Any],
        inputs: dict[str, Any],
    ) -> list[dict[str, Any]]:
        if not isinstance(lm, AttestLM):
            raise TypeError(f"TagPromptAdapter answers through AttestLM, not {type(lm).__name__}")
        return [self.parse(signature, lm.answer(self.format(signature, demos, inputs), SCHEMA))]

    def format(self, signature: Any, demos: list[Any], inputs: dict[str, Any]) -> list[Message]:
        return tag_messages(inputs["title"], inputs["summary"], prompt=prompt_from(signature.instructions, demos))

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        try:
            return {"tags": list(parse_answer(completion, ItemTags).tags)}
        except ModelOutputError as exc:
            raise dspy.AdapterParseError(type(self).__name__, signature, completion, exc.reason) from None


# --- the search: BootstrapFewShot over train cases ---------------------------------------


@dataclass(frozen=True)
class Search:
    """What the optimiser chose, and what it tried."""

    prompt: TagPrompt
    tried: list[str]  # the ids of the train cases the bootstrap could try
    bootstrapped: int  # demos the model tagged exactly right (the rest are labelled cases)
    refused: int  # requests refused because the budget was spent


def tag_signature(instructions: str) -> Any:
    """The DSPy signature for tagging: fields from `dspy_fields()`, the given instructions."""
    inputs, outputs = dspy_fields()
    fields: dict[str, tuple[type, Any]] = {name: (str, dspy.InputField()) for name in inputs}
    fields |= {name: (list[str], dspy.OutputField()) for name in outputs}
    return dspy.make_signature(fields, instructions)


def _metric(example: Any, prediction: Any, trace: object = None) -> float:
    """F1 from the eval's own scorer, on the parsed answer."""
    return float(score_one(example.case, json.dumps({"tags": prediction.tags}))["score"])


def search(
    chat: BudgetedChat, train: Sequence[TaggingCase], *, seed: int, max_demos: int, instructions: str, label: str
) -> Search:
    """Bootstrap demos from at most `chat.limit` train cases, one model call each (max_rounds=1).

    A bootstrapped demo is a case the model tagged exactly right (F1 = 1, so no demo teaches
    a wrong tag); the rest of the `max_demos` are labelled cases it tried but did not get right.
    """
    if any(c.split != "train" for c in train):
        raise ValueError("the optimiser sees train cases only")
    tried = random.Random(seed).sample(list(train), min(chat.limit, len(train)))
    trainset = [dspy.Example(**to_dspy_example(c)).with_inputs(*dspy_fields()[0]) for c in tried]
    optimiser = dspy.BootstrapFewShot(
        metric=_metric,
        metric_threshold=1.0,
        max_bootstrapped_demos=max_demos,
        max_labeled_demos=max_demos,
        max_rounds=1,
        max_errors=len(trainset) + 1,
    )
    try:
        with dspy.context(lm=AttestLM(chat, label), adapter=TagPromptAdapter()), contextlib.redirect_stdout(sys.stderr):
            program = optimiser.compile(dspy.Predict(tag_signature(instructions)), trainset=trainset)
    except _SearchStopped:
        assert chat.failure is not None
        raise chat.failure from None
    demos = list(program.demos)
    bootstrapped = sum(bool(d.get("augmented", False)) for d in demos)
    return Search(prompt_from(program.signature.instructions, demos), [c.id for c in tried], bootstrapped, chat.refused)


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
