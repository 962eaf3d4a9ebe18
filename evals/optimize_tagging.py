"""The tagging prompt optimiser: DSPy bootstrapped few-shot on the train split, judged on dev.

    python evals/optimize_tagging.py --backend local --budget 12
    nox -s optimize-tagging -- --backend local --budget 12

This is the one module under evals/ that imports dspy (the design note's rule, pinned by
tests/project/test_seed_contract.py); what the search needs besides DSPy is in
evals/cli/tagging_search.py, which takes what DSPy gives it as arguments. What is
optimised is the prompt that ships: DSPy's `Predict` runs through `TagPromptAdapter`,
which renders every request with `attest.features.tag_messages` (the predictor's
instructions and demos become a `TagPrompt`), so DSPy's own prompt format never reaches
the model, and asks `AttestLM`, whose calls go through attest's backend and response
cache, so a rerun with the same settings makes no model calls.

`dspy.BootstrapFewShot` tries at most `--budget` train cases, one model call each (a
counter refuses any call beyond the budget), keeps as demos the cases the model tags
exactly right and tops them up with labelled train cases. The candidate and the shipped
default prompt are then recorded as two runs on the dev split, which the optimiser never
sees, and the ship decision is `tagging_eval.gate`, the paired verdict between the two
recorded runs against `--margin` (default 0): only **ship** writes the candidate, as an ATTEST_TAG_PROMPT
artifact; inconclusive and regress write nothing. The decision (verdict, interval, p,
margin, both run ids) is written beside the candidate run as `decision.json`, where
`python -m evals.rescore` re-checks it, and `python -m evals.compare BASE CAND` shows
the comparison in full. `--split train` is refused: the demos were chosen from train, so
a verdict there would grade the candidate on its own examples. Either way a record of
the run goes to `<cache>/optimize/`; the exit status is 0 whatever the verdict, 1 on an
error and 2 on a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from attest.answers import ModelOutputError
from attest.backends.registry import make_backend
from attest.backends.types import Backend, Message
from attest.errors import run_main
from attest.features import tag_messages
from attest.options import settings_from_args
from evals.analysis.comparison import compare
from evals.analysis.pairing import Run, pair
from evals.cli.optimize_options import optimise_parser
from evals.cli.optimize_output import Outcome, print_outcome, record, record_path, write_artifact
from evals.cli.runner import BackendFactory
from evals.cli.tagging_search import (
    BASELINE,
    SCHEMA,
    BudgetedChat,
    Search,
    SearchStopped,
    metric,
    parse_tags,
    prompt_from,
    run_prompt,
    train_sample,
)
from evals.corpus.cases import TaggingCase
from evals.engine.chat import CachedChat, SampleChat
from evals.store.keys import Identity
from evals.store.open import Opened, open_store
from evals.store.settings import resolve_cache_dir, resolve_store_url
from evals.tagging_eval import TASK, dspy_fields, gate, load_cases, to_dspy_example

__all__ = ["AttestLM", "TagPromptAdapter", "main", "search", "tag_signature"]


# --- the DSPy side: attest's renderer, parser and cache behind DSPy's LM and adapter ---------


class AttestLM(dspy.BaseLM):  # type: ignore[misc]
    """The LM DSPy sees. Only TagPromptAdapter calls it, through `answer`; DSPy's own
    request path (`forward`) and cache are never used."""

    def __init__(self, chat: SampleChat, name: str) -> None:
        super().__init__(model=name, cache=False)
        self.chat = chat

    def answer(self, messages: Sequence[Message], schema: Mapping[str, Any]) -> str:
        """The model's raw answer to a rendered request (sample 0)."""
        return self.chat(messages, schema, 0).text


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
            return parse_tags(completion)
        except ModelOutputError as exc:
            raise dspy.AdapterParseError(type(self).__name__, signature, completion, exc.reason) from None


def tag_signature(instructions: str) -> Any:
    """The DSPy signature for tagging: fields from `dspy_fields()`, the given instructions."""
    inputs, outputs = dspy_fields()
    fields: dict[str, tuple[type, Any]] = {name: (str, dspy.InputField()) for name in inputs}
    fields |= {name: (list[str], dspy.OutputField()) for name in outputs}
    return dspy.make_signature(fields, instructions)


def search(
    chat: BudgetedChat, train: Sequence[TaggingCase], *, seed: int, max_demos: int, instructions: str, label: str
) -> Search:
    """Bootstrap demos from at most `chat.limit` train cases, one model call each (max_rounds=1).

    A bootstrapped demo is a case the model tagged exactly right (F1 = 1, so no demo teaches
    a wrong tag); the rest of the `max_demos` are labelled cases it tried but did not get right.
    """
    tried = train_sample(train, chat.limit, seed)
    trainset = [dspy.Example(**to_dspy_example(c)).with_inputs(*dspy_fields()[0]) for c in tried]
    optimiser = dspy.BootstrapFewShot(
        metric=metric,
        metric_threshold=1.0,
        max_bootstrapped_demos=max_demos,
        max_labeled_demos=max_demos,
        max_rounds=1,
        max_errors=len(trainset) + 1,
    )
    try:
        with dspy.context(lm=AttestLM(chat, label), adapter=TagPromptAdapter()), contextlib.redirect_stdout(sys.stderr):
            program = optimiser.compile(dspy.Predict(tag_signature(instructions)), trainset=trainset)
    except SearchStopped:
        assert chat.failure is not None
        raise chat.failure from None
    demos = list(program.demos)
    bootstrapped = sum(bool(d.get("augmented", False)) for d in demos)
    return Search(prompt_from(program.signature.instructions, demos), [c.id for c in tried], bootstrapped, chat.refused)


# --- the entry point ------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, *, backend_factory: BackendFactory = make_backend) -> int:
    parser = optimise_parser()
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


def _run(args: argparse.Namespace, backend_factory: BackendFactory) -> int:
    train, judged = load_cases(split="train"), load_cases(split=args.split)
    cache_dir = resolve_cache_dir(args.cache_dir)
    store = open_store(resolve_store_url(args.store, args.store_file), cache_dir)
    try:
        settings = settings_from_args(args, default_backend="auto")
        backend = backend_factory(dataclasses.replace(settings, stub_answer=TASK.stub_answer))
        try:
            identity = Identity.of(backend)
            outcome = _optimise(args, backend, store, identity, train, judged)
        finally:
            backend.close()
    finally:
        store.close()
    written = write_artifact(args.output, outcome.search.prompt) if outcome.decision.verdict == "ship" else None
    kept = record(args, cache_dir, identity, outcome, written)
    if args.json:
        print(json.dumps({**kept, "record": str(record_path(cache_dir, kept))}, indent=1, ensure_ascii=True))
    else:
        print_outcome(args, identity, outcome, {c.title: c.id for c in train}, written, record_path(cache_dir, kept))
    return 0


def _optimise(
    args: argparse.Namespace,
    backend: Backend,
    opened: Opened,
    identity: Identity,
    train: Sequence[TaggingCase],
    judged: Sequence[TaggingCase],
) -> Outcome:
    cache, store = opened.answers, opened.runs
    budgeted = BudgetedChat(CachedChat.from_backend(backend, cache, identity), args.budget)
    label = f"attest/{identity.kind}/{identity.model}"
    found = search(
        budgeted, train, seed=args.seed, max_demos=args.max_demos, instructions=BASELINE.instructions, label=label
    )
    dev_chat = CachedChat.from_backend(backend, cache, identity)
    baseline = run_prompt(dev_chat, store, judged, BASELINE, f"{args.label} baseline", split=args.split)
    candidate = run_prompt(dev_chat, store, judged, found.prompt, f"{args.label} candidate", split=args.split)
    runs = Run(baseline.manifest, baseline.report), Run(candidate.manifest, candidate.report)
    decision = gate(store, *runs, margin=args.margin)  # the ship decision, recorded beside the candidate
    comparison = compare(*pair(*runs), margin=args.margin)  # the same pairing, for the printed figures
    return Outcome(found, baseline, candidate, comparison, decision, budgeted.calls, dev_chat.calls)


if __name__ == "__main__":
    raise SystemExit(main())
