"""The tagging prompt optimiser: DSPy bootstrapped few-shot on the train split, judged on dev.

    python evals/optimize_tagging.py --backend local --budget 12
    nox -s optimize-tagging -- --backend local --budget 12

What is optimised is the prompt that ships: the search (evals/cli/tagging_search.py)
renders every request with `attest.features.tag_messages` and asks the model through
attest's backend and response cache, so a rerun with the same settings makes no model
calls.

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
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from attest.backends.registry import make_backend
from attest.backends.types import Backend
from attest.errors import AttestError, run_main
from attest.features import TagPrompt, load_tag_prompt
from attest.options import OneLineErrorParser, add_backend_options, at_least, settings_from_args
from evals.analysis.comparison import compare
from evals.analysis.pairing import Run, pair
from evals.cli.optimize_output import Outcome, print_outcome, record, record_path
from evals.cli.options import label_type, margin_type
from evals.cli.runner import BackendFactory
from evals.cli.tagging_search import (
    BASELINE,
    AttestLM,
    BudgetedChat,
    BudgetExceeded,
    Search,
    TagPromptAdapter,
    evaluate_prompt,
    prompt_from,
    run_prompt,
    search,
    tag_signature,
)
from evals.corpus.cases import TaggingCase
from evals.engine.pipeline import CachedChat
from evals.store.keys import Identity
from evals.store.open import Opened, open_store
from evals.store.records import write_atomic
from evals.store.settings import STORE_HELP, resolve_cache_dir, resolve_store_url
from evals.tagging_eval import gate, load_cases

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


class ArtifactWriteError(AttestError):
    """The accepted prompt cannot be written to --output."""


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
    parser.add_argument(
        "--label",
        type=label_type,
        default="optimiser",
        metavar="NAME",
        help="label the two runs 'NAME baseline' and 'NAME candidate' (default optimiser)",
    )
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


def _write_artifact(path: Path, prompt: TagPrompt) -> Path:
    """Write the accepted prompt atomically and read it back as ATTEST_TAG_PROMPT would."""
    try:
        write_atomic(path, json.dumps(prompt.model_dump(mode="json"), indent=1, ensure_ascii=False))
    except OSError as exc:
        raise ArtifactWriteError(f"cannot write {path} ({exc.strerror or exc}): give a writable --output") from None
    if load_tag_prompt(path) != prompt:
        raise ArtifactWriteError(f"{path} does not read back as the accepted prompt")
    return path


if __name__ == "__main__":
    raise SystemExit(main())
