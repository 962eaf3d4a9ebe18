"""What the tagging optimiser keeps and prints: the accepted artifact, the record in <cache>/optimize/ and the
summary lines."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attest.errors import AttestError
from attest.features import TagPrompt, load_tag_prompt
from attest.text import printable
from evals.analysis.comparison import Comparison
from evals.cli.tagging_search import BASELINE, Search
from evals.engine.execute import RunOutcome
from evals.engine.pipeline import EvalResult
from evals.store.keys import Identity
from evals.store.models import Decision
from evals.store.records import new_run_id, write_atomic
from evals.store.settings import hint_options
from evals.tagging_eval import TASK

__all__ = [
    "ArtifactWriteError",
    "Outcome",
    "compare_command",
    "print_outcome",
    "record",
    "record_path",
    "shown",
    "write_artifact",
]


class ArtifactWriteError(AttestError):
    """The accepted prompt cannot be written to --output."""


@dataclass(frozen=True)
class Outcome:
    """What one optimiser run found and decided."""

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


def write_artifact(path: Path, prompt: TagPrompt) -> Path:
    """Write the accepted prompt atomically and read it back as ATTEST_TAG_PROMPT would."""
    try:
        write_atomic(path, json.dumps(prompt.model_dump(mode="json"), indent=1, ensure_ascii=False))
    except OSError as exc:
        raise ArtifactWriteError(f"cannot write {path} ({exc.strerror or exc}): give a writable --output") from None
    if load_tag_prompt(path) != prompt:
        raise ArtifactWriteError(f"{path} does not read back as the accepted prompt")
    return path


def compare_command(args: argparse.Namespace, outcome: Outcome) -> str:
    where = hint_options(args.cache_dir, args.store)
    margin = f" --margin {args.margin:g}" if args.margin else ""
    return f"python -m evals.compare{where}{margin} {outcome.baseline_run.run_id} {outcome.candidate_run.run_id}"


def record_path(cache_dir: Path, record: Mapping[str, Any]) -> Path:
    return cache_dir / "optimize" / f"{record['id']}.json"


def record(
    args: argparse.Namespace, cache_dir: Path, identity: Identity, outcome: Outcome, written: Path | None
) -> dict[str, Any]:
    """Keep the run (and a refused candidate) in <cache>/optimize/ for inspection; return what was kept."""
    found = outcome.search
    record = {
        "id": new_run_id(TASK.name),
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
        "decision": outcome.decision.to_dict(),
        "compare": compare_command(args, outcome),
        "written": str(written) if written else None,
        "model_calls": {"search": outcome.search_calls, "dev": outcome.dev_calls},
    }
    write_atomic(record_path(cache_dir, record), json.dumps(record, indent=1, ensure_ascii=False))
    return record


def print_outcome(
    args: argparse.Namespace,
    identity: Identity,
    outcome: Outcome,
    ids_by_title: Mapping[str, str],
    written: Path | None,
    record: Path,
) -> None:
    found, prompt, x = outcome.search, outcome.search.prompt, outcome.comparison
    verdict = outcome.decision.verdict  # the gate's: what shipped or not
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
        f"  difference  {x.paired.difference.format(signed=True)} ({x.paired.interval.level:.1%} interval); "
        f"p = {x.paired.p_value:.2g} ({x.paired.test}); {x.paired.improved} cases better, {x.paired.regressed} worse",
        f"  tail        {x.paired.tail.format()}",
        f"  verdict     {verdict.upper()} against a margin of {outcome.decision.margin:g}"
        + ("" if verdict == "ship" else ": the candidate is not accepted"),
        f"  runs        baseline {outcome.baseline_run.run_id}, candidate {outcome.candidate_run.run_id}",
        f"  compare     {compare_command(args, outcome)}",
    ]
    if written is not None:
        where = shown(written)
        lines.append(f"  artifact    written to {where}; use it with ATTEST_TAG_PROMPT={where} attest tag ...")
    else:
        lines.append(f"  artifact    not written: the verdict is {verdict}; {shown(args.output)} is unchanged")
    lines += [
        f"  record      {record}",
        f"  model calls {outcome.search_calls + outcome.dev_calls} "
        f"({outcome.search_calls} searching, {outcome.dev_calls} scoring {args.split})",
    ]
    print(printable("\n".join(lines), multiline=True))


def shown(path: Path) -> str:
    """`path` relative to the working directory when it lies inside it, as a user would type it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
