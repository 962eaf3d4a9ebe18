"""A task's bindings: everything in which one task differs from another.

The engine, the analysis, the renderers and the command lines read a task only
through this record; nothing outside the task modules (evals/*_eval.py) and their
registry (evals/tasks.py) names a task. A task is generic over its case model (any
strict pydantic model deriving `evals.corpus.cases.Case`), its `score_one` returns a
typed `Scored`, and it brings its own stub answerer. A task outside the tree is a
package that builds a `Task` and names it under the entry-point group `attest.tasks`
(CONTRIBUTING.md, "Adding a task").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypedDict, TypeVar

from pydantic import BaseModel

from attest.answers import schema_of
from attest.backends.types import Message, StubAnswer
from evals.corpus.cases import Case
from evals.corpus.judgements import JudgementEntry

__all__ = [
    "CheckContext",
    "CorpusChecks",
    "DspyAdapter",
    "IntervalMethod",
    "JudgeSpec",
    "Scored",
    "Strategy",
    "Task",
]

C = TypeVar("C", bound=Case)
# How a task's mean score gets its 95% interval, fixed per task (never chosen from one run's values):
# "wilson" for scores that are 0 or 1 by construction, "bootstrap" (seeded BCa) for graded ones.
IntervalMethod = Literal["wilson", "bootstrap"]


class Scored(TypedDict):
    """What `score_one` returns for one answer: the case id, a score in [0, 1] and prose errors (the design
    note's `{"id", "score", "errors", ...}`). A task adds its own typed keys by subclassing (reaction's
    `verdict`), which the report and the task's `summarise` read; the pipeline reads only these three."""

    id: str
    score: float
    errors: list[str]


@dataclass(frozen=True)
class DspyAdapter(Generic[C]):
    """The task as DSPy sees it, for an optimiser: input and output field names, and a case as an example."""

    fields: tuple[tuple[str, ...], tuple[str, ...]]
    to_example: Callable[[C], dict[str, Any]]


@dataclass(frozen=True)
class Strategy(Generic[C]):
    """A cheap answer strategy, the kind a trivial baseline is made of: the raw answer text for each case."""

    describe: str  # in prose, as the report prints it
    answer: Callable[[C], str]

    @classmethod
    def constant(cls, text: str, describe: str) -> Strategy[Any]:
        """The same answer text for every case."""
        return cls(describe, lambda case: text)


@dataclass(frozen=True)
class CheckContext:
    """What corpus-check hands a task's rules besides its own corpus: the flows fixture directory."""

    fixture: Path


def _no_problems(path: Path, cases: Sequence[Any], context: CheckContext) -> Iterable[str]:
    return ()


def _no_targets(path: Path, cases: Sequence[Any]) -> Iterable[str]:
    return ()


def _no_classes(cases: Sequence[Any]) -> list[str]:
    return []


@dataclass(frozen=True)
class CorpusChecks(Generic[C]):
    """What `corpus_check` runs on a task's corpus: its table's class columns, its rules and its growth targets."""

    headers: tuple[str, ...] = ()
    classes: Callable[[Sequence[C]], list[str]] = _no_classes
    rules: Callable[[Path, Sequence[C], CheckContext], Iterable[str]] = _no_problems
    targets: Callable[[Path, Sequence[C]], Iterable[str]] = _no_targets


@dataclass(frozen=True)
class JudgeSpec(Generic[C]):
    """A task's judge stage: its prompt (one public renderer), its answer model and its human-graded corpus.

    - `render(case, answer)`: the judge request for one raw answer, or None when the answer
      holds no text to judge (it does not parse): judged fail without a request;
    - `render_entry(entry)`: the judge request for one entry of the judgement corpus;
    - `probe()`: the judge prompt rendered on fixed placeholder inputs, whose fingerprint
      names the judge prompt whatever the cases are.
    """

    output_model: type[BaseModel]
    render: Callable[[C, str], list[Message] | None]
    render_entry: Callable[[JudgementEntry], list[Message]]
    probe: Callable[[], list[Message]]
    corpus: Path
    stub_answer: StubAnswer | None = None  # what the stub backend judges with (`--judge-backend stub`)

    @property
    def schema(self) -> dict[str, Any]:
        return schema_of(self.output_model)


def _no_summary(cases: Sequence[Any], results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {}


def _no_strategies(cases: Sequence[Any]) -> list[Strategy[Any]]:
    return []


def _no_provenance() -> Mapping[str, str | None]:
    return {}


@dataclass(frozen=True)
class Task(Generic[C]):
    """One task's bindings.

    - `render`, `output_model` (whose JSON schema is sent) and the pure `score_one`;
    - `summarise`: the task's summary metrics over every scored sample;
    - `strategies`: the cheap answer strategies a trivial baseline picks the best of,
      built from the cases they are scored on;
    - `interval`: how the mean score's interval is computed, one method per task;
    - `verdict_metrics`: extra rows of the report's uncertainty block from the samples
      (reaction's precision and recall), or None;
    - `provenance`: extra fields of the run manifest's provenance (tagging's prompt artifact);
    - `stub_answer`: what the stub backend (`--offline`) answers this task's requests with;
    - `dspy`: the optional DSPy adapter (the three seed tasks have one; `dspy_fields` and
      `to_dspy_example` read it);
    - `checks`: what corpus-check runs on the corpus;
    - `judge`: the task's judge stage (`JudgeSpec`), or None for a task no model grades.
    """

    name: str
    case_model: type[C]
    output_model: type[BaseModel]
    corpus: Path
    render: Callable[[C], list[Message]]
    score_one: Callable[[C, str], Scored]
    summarise: Callable[[Sequence[C], Sequence[dict[str, Any]]], dict[str, Any]] = _no_summary
    strategies: Callable[[Sequence[C]], list[Strategy[C]]] = _no_strategies
    interval: IntervalMethod = "bootstrap"
    verdict_metrics: Callable[[Sequence[C], Sequence[Any]], dict[str, Any]] | None = None
    provenance: Callable[[], Mapping[str, str | None]] = _no_provenance
    stub_answer: StubAnswer | None = None
    dspy: DspyAdapter[C] | None = None
    checks: CorpusChecks[C] = field(default_factory=CorpusChecks)
    judge: JudgeSpec[C] | None = None

    @property
    def schema(self) -> dict[str, Any]:
        return schema_of(self.output_model)

    @property
    def dspy_fields(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(input names, output names) as DSPy sees the task; empty without an adapter."""
        return self.dspy.fields if self.dspy else ((), ())

    @property
    def to_dspy_example(self) -> Callable[[C], dict[str, Any]] | None:
        return self.dspy.to_example if self.dspy else None
