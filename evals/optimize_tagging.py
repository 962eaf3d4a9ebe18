"""The tagging prompt optimiser: DSPy bootstrapped few-shot on the train split, judged on dev.

    python evals/optimize_tagging.py --backend local --budget 12
    nox -s optimize-tagging -- --backend local --budget 12

What is optimised is the prompt that ships. DSPy's `Predict` runs through
`TagPromptAdapter`, which renders every request with `attest.features.tag_messages`
(the predictor's instructions and demos become a `TagPrompt`) and parses the answer
with `parse_answer`: DSPy's own prompt format never reaches the model. The adapter
asks `AttestLM`, whose calls go through attest's backend and response cache, so a
rerun with the same settings makes no model calls.

`dspy.BootstrapFewShot` tries at most `--budget` train cases, one model call each (a
counter refuses any call beyond the budget), keeps as demos the cases the model tags
exactly right and tops them up with labelled train cases. The candidate and the shipped
default prompt are then recorded as two runs on the dev split, which the optimiser never
sees, and the gate is the paired verdict of `evals.analysis.comparison.compare` against
`--margin` (default 0): only **ship** writes the candidate, as an ATTEST_TAG_PROMPT
artifact; inconclusive and regress write nothing. The decision (verdict, interval, p,
margin, both run ids) is written beside the candidate run as `decision.json`, where
`python -m evals.rescore` re-checks it, and `python -m evals.compare BASE CAND` shows
the comparison in full. `--split train` is refused: the demos were chosen from train, so
a verdict there would grade the candidate on its own examples. Either way a record of
the run goes to `<cache>/optimize/`; the exit status is 0 whatever the verdict, 1 on an
error and 2 on a usage error.

This is the only module under evals/ that imports dspy. It is over 300 lines for that
reason: the DSPy adapter, the budgeted chat and the command line that wire DSPy to
attest's cache and run records stay together so dspy never leaks into the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from attest.answers import ModelOutputError, parse_answer, schema_of
from attest.backends.registry import make_backend
from attest.backends.types import Backend, BackendError, ChatResponse, Message
from attest.errors import AttestError, run_main
from attest.features import DEFAULT_TAG_INSTRUCTIONS, ItemTags, TagDemo, TagPrompt, load_tag_prompt, tag_messages
from attest.options import OneLineErrorParser, add_backend_options, at_least, settings_from_args
from attest.text import printable
from evals.analysis.comparison import Comparison
from evals.analysis.pairing import Run, decide
from evals.cli.options import margin_type
from evals.cli.runner import BackendFactory
from evals.corpus.cases import TaggingCase
from evals.engine.execute import RunOutcome, RunSpec, execute, with_render
from evals.engine.execute import evaluate as execute_evaluate
from evals.engine.pipeline import CachedChat, EvalResult, SampleChat, stderr_progress
from evals.store.keys import Identity, request_key
from evals.store.open import Opened, open_store
from evals.store.records import Decision, RunStore, new_run_id, write_atomic
from evals.store.settings import STORE_HELP, resolve_cache_dir, resolve_store_url
from evals.tagging_eval import TASK, dspy_fields, load_cases, score_one, to_dspy_example

__all__ = [
    "AttestLM",
    "BudgetExceeded",
    "BudgetedChat",
    "Search",
    "TagPromptAdapter",
    "evaluate_prompt",
    "main",
    "prompt_from",
    "search",
    "tag_signature",
]

DEFAULT_OUTPUT = Path(__file__).with_name("prompts") / "tagging.json"
DEFAULT_BUDGET = 12
DEFAULT_MAX_DEMOS = 3  # with 3 demos a request is ~1200 tokens; SmolLM2 (local) has 2048 for prompt and answer
BASELINE = TagPrompt(instructions=DEFAULT_TAG_INSTRUCTIONS)
SCHEMA = schema_of(ItemTags)


class BudgetExceeded(AttestError):
    """The optimiser asked for a model call beyond --budget."""


class ArtifactWriteError(AttestError):
    """The accepted prompt cannot be written to --output."""


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
    store: RunStore,
    cases: Sequence[TaggingCase],
    prompt: TagPrompt,
    label: str,
    *,
    split: str = "dev",
) -> RunOutcome:
    """A recorded run of the tagging task with `prompt` on `cases` (one split): compare reads it back."""
    spec = RunSpec(prompt_task(prompt), cases, load_cases(), TASK.corpus, split, 1, label=label)
    return execute(spec, chat, store, progress=stderr_progress(f"{label} on {split}"))


# --- the entry point ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="optimize_tagging.py",
        description="Bootstrap few-shot demos for the tagging prompt on train cases; compare the candidate with "
        "the shipped prompt on dev and write it only when the verdict is ship. Exit 0 whatever the verdict "
        "(it is printed and recorded), 1 on an error, 2 on a usage error.",
    )
    parser.add_argument(
        "--budget",
        type=at_least(1),
        default=DEFAULT_BUDGET,
        help=f"model calls the optimiser may make on train cases "
        f"(default {DEFAULT_BUDGET}); dev scoring costs up to twice the dev cases more, less when cached",
    )
    parser.add_argument("--seed", type=int, default=0, help="which train cases the optimiser tries (default 0)")
    parser.add_argument(
        "--max-demos",
        type=at_least(1),
        default=DEFAULT_MAX_DEMOS,
        help=f"demos in the prompt (default {DEFAULT_MAX_DEMOS})",
    )
    parser.add_argument(
        "--margin", type=margin_type, default=0.0, help="gain over the baseline required to ship, fixed before looking"
    )
    parser.add_argument(
        "--split",
        choices=("dev", "train"),
        default="dev",
        help="where the candidate is judged: dev (default); train is refused, the demos were chosen there",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="where an accepted artifact goes (default evals/prompts/tagging.json)",
    )
    parser.add_argument("--cache-dir", help="cache and run directory (env ATTEST_CACHE_DIR; default cache/)")
    parser.add_argument("--store", help=STORE_HELP)
    parser.add_argument("--json", action="store_true", help="print the record of the run as JSON")
    add_backend_options(parser, default_backend="auto")
    return parser


def main(argv: Sequence[str] | None = None, *, backend_factory: BackendFactory = make_backend) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.split == "train":
        parser.error(
            "--split train: the optimiser chose its demos from the train cases, so a verdict there would grade "
            "its own examples; judge it on dev"
        )
    try:
        return run_main("optimize-tagging", lambda: _run(args, backend_factory))
    except KeyboardInterrupt:
        print("\noptimize-tagging: interrupted; every answer so far is cached, rerun to continue", file=sys.stderr)
        return 130


@dataclass(frozen=True)
class _Outcome:
    search: Search
    baseline_run: RunOutcome
    candidate_run: RunOutcome
    comparison: Comparison
    decision: Decision
    search_calls: int
    dev_calls: int

    @property
    def baseline(self) -> EvalResult:
        return self.baseline_run.result

    @property
    def candidate(self) -> EvalResult:
        return self.candidate_run.result


def _run(args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    train, judged = load_cases(split="train"), load_cases(split=args.split)
    cache_dir = resolve_cache_dir(args.cache_dir)
    store = open_store(resolve_store_url(args.store), cache_dir)
    try:
        backend = backend_factory(settings_from_args(args, default_backend="auto"))
        try:
            identity = Identity.of(backend)
            outcome = _optimise(args, backend, store, identity, train, judged)
        finally:
            backend.close()
    finally:
        store.close()
    written = _write_artifact(args.output, outcome.search.prompt) if outcome.decision.verdict == "ship" else None
    record = _record(args, cache_dir, identity, outcome, written)
    if args.json:
        print(json.dumps({**record, "record": str(_record_path(cache_dir, record))}, indent=1, ensure_ascii=True))
    else:
        _print(args, identity, outcome, {c.title: c.id for c in train}, written, _record_path(cache_dir, record))
    return 0


def _optimise(
    args: argparse.Namespace,
    backend: Backend,
    opened: Opened,
    identity: Identity,
    train: Sequence[TaggingCase],
    judged: Sequence[TaggingCase],
) -> _Outcome:
    cache, store = opened.answers, opened.runs
    budgeted = BudgetedChat(CachedChat.from_backend(backend, cache, identity), args.budget)
    label = f"attest/{identity.kind}/{identity.model}"
    found = search(
        budgeted, train, seed=args.seed, max_demos=args.max_demos, instructions=BASELINE.instructions, label=label
    )
    dev_chat = CachedChat.from_backend(backend, cache, identity)
    baseline = run_prompt(dev_chat, store, judged, BASELINE, "optimiser baseline", split=args.split)
    candidate = run_prompt(dev_chat, store, judged, found.prompt, "optimiser candidate", split=args.split)
    comparison, decision = decide(
        store, Run(baseline.manifest, baseline.report), Run(candidate.manifest, candidate.report), margin=args.margin
    )
    return _Outcome(found, baseline, candidate, comparison, decision, budgeted.calls, dev_chat.calls)


def _write_artifact(path: Path, prompt: TagPrompt) -> Path:
    """Write the accepted prompt atomically and read it back as ATTEST_TAG_PROMPT would."""
    try:
        write_atomic(path, json.dumps(prompt.model_dump(mode="json"), indent=1, ensure_ascii=False))
    except OSError as exc:
        raise ArtifactWriteError(f"cannot write {path} ({exc.strerror or exc}): give a writable --output") from None
    if load_tag_prompt(path) != prompt:
        raise ArtifactWriteError(f"{path} does not read back as the accepted prompt")
    return path


def _compare_command(args: argparse.Namespace, outcome: _Outcome) -> str:
    where = f" --cache-dir {args.cache_dir}" if args.cache_dir else ""
    margin = f" --margin {args.margin:g}" if args.margin else ""
    return f"python -m evals.compare{where}{margin} {outcome.baseline_run.run_id} {outcome.candidate_run.run_id}"


def _record_path(cache_dir: Path, record: Mapping[str, Any]) -> Path:
    return cache_dir / "optimize" / f"{record['id']}.json"


def _record(
    args: argparse.Namespace, cache_dir: Path, identity: Identity, outcome: _Outcome, written: Path | None
) -> dict[str, Any]:
    """Keep the run (and a refused candidate) in <cache>/optimize/ for inspection; return what was kept."""
    found = outcome.search
    record = {
        "id": new_run_id("tagging"),
        "backend": identity.kind,
        "model": identity.model,
        "digest": identity.digest,
        "budget": args.budget,
        "seed": args.seed,
        "max_demos": args.max_demos,
        "margin": args.margin,
        "split": args.split,
        "tried": found.tried,
        "bootstrapped": found.bootstrapped,
        "refused": found.refused,
        "candidate_prompt": found.prompt.model_dump(mode="json"),
        "runs": {"baseline": outcome.baseline_run.run_id, "candidate": outcome.candidate_run.run_id},
        "scores": {"baseline": outcome.baseline.by_case(), "candidate": outcome.candidate.by_case()},
        "baseline_overall": outcome.baseline.overall,
        "candidate_overall": outcome.candidate.overall,
        "decision": outcome.decision.model_dump(mode="json"),
        "compare": _compare_command(args, outcome),
        "written": str(written) if written else None,
        "model_calls": {"search": outcome.search_calls, "dev": outcome.dev_calls},
    }
    write_atomic(_record_path(cache_dir, record), json.dumps(record, indent=1, ensure_ascii=False))
    return record


def _print(
    args: argparse.Namespace,
    identity: Identity,
    outcome: _Outcome,
    ids_by_title: Mapping[str, str],
    written: Path | None,
    record: Path,
) -> None:
    found, prompt, x = outcome.search, outcome.search.prompt, outcome.comparison
    demos = ", ".join(ids_by_title.get(d.title, "?") for d in prompt.demos) or "none"
    same = "unchanged" if prompt.instructions == BASELINE.instructions else "changed"
    lines = [
        f"tagging prompt optimiser, {identity.kind} {identity.model}",
        f"  search      BootstrapFewShot over {len(found.tried)} train cases (seed {args.seed}); "
        f"{outcome.search_calls} model calls of a budget of {args.budget}",
    ]
    if found.refused:
        lines.append(f"  budget      spent: {found.refused} further request(s) refused, not sent")
    lines += [
        f"  candidate   {len(prompt.demos)} demos ({found.bootstrapped} tagged exactly right by the model): {demos}; "
        f"instructions {same}",
        f"  {args.split:<11} baseline {x.base.format()}  candidate {x.cand.format()}",
        f"  difference  {x.paired.difference.format(signed=True)} (95% interval); p = {x.paired.p_value:.2g} "
        f"({x.paired.test}); {x.paired.improved} cases better, {x.paired.regressed} worse",
        f"  verdict     {x.verdict.upper()} against a margin of {x.margin:g}"
        + ("" if x.verdict == "ship" else ": the candidate is not accepted"),
        f"  runs        baseline {outcome.baseline_run.run_id}, candidate {outcome.candidate_run.run_id}",
        f"  compare     {_compare_command(args, outcome)}",
    ]
    if written is not None:
        shown = _shown(written)
        lines.append(f"  artifact    written to {shown}; use it with ATTEST_TAG_PROMPT={shown} attest tag ...")
    else:
        lines.append(f"  artifact    not written: the verdict is {x.verdict}; {_shown(args.output)} is unchanged")
    lines += [
        f"  record      {record}",
        f"  model calls {outcome.search_calls + outcome.dev_calls} "
        f"({outcome.search_calls} searching, {outcome.dev_calls} scoring {args.split})",
    ]
    print(printable("\n".join(lines), multiline=True))


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it lies inside it, as a user would type it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    raise SystemExit(main())
