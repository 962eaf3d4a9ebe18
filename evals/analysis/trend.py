"""A task's score over its runs, oldest first: each run's score and interval, and what changed from the
run before it (prompt, model, scorer, corpus, options), with the verdict `compare` would give that step.

Pure: the runs come in loaded (evals/cli/trend.py picks them); nothing here reads a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from evals.analysis.comparison import ComparisonError, compare
from evals.analysis.pairing import Run, pair

__all__ = ["CHANGE_WORDS", "TrendStep", "trend"]

# what a step changed, in words: a provenance key of `what_changed` -> the word shown
CHANGE_WORDS = {
    "prompt_fingerprint": "prompt",
    "system_prompts": "prompt",
    "tag_prompt_sha256": "prompt",
    "backend": "model",
    "model": "model",
    "digest": "model",
    "options": "options",
    "scorer_fingerprint": "scorer",
    "corpus": "corpus",
    "corpus_sha256": "corpus",
}


@dataclass(frozen=True)
class TrendStep:
    """One run in the trend, and how it differs from the run before it."""

    run_id: str
    created: float
    mean: float
    low: float | None  # None: the report holds no interval (made before reports were annotated)
    high: float | None
    score: str  # the house format, `0.68 [0.60, 0.75] n=144`, or the mean alone
    n: int
    who: str
    commit: str
    branch: str
    label: str
    changed: tuple[str, ...] = ()  # words from CHANGE_WORDS, in their order; () for the first run
    verdict: str = ""  # what `compare` says of this run against the one before: ship, regress, inconclusive
    note: str = ""  # why the step could not be compared, when it could not

    @property
    def flag(self) -> str:
        """`SHIP` or `REGRESS` when the step is worth a look, else ""."""
        return self.verdict.upper() if self.verdict in ("ship", "regress") else ""


def trend(runs: Sequence[Run], who: Mapping[str, str]) -> list[TrendStep]:
    """Each run (oldest first) as a step, compared with the one before it as `compare` would."""
    steps = []
    for i, run in enumerate(runs):
        step = _step(run, who.get(run.run_id, "?"))
        if i > 0:
            step = _against(runs[i - 1], run, step)
        steps.append(step)
    return steps


def _step(run: Run, who: str) -> TrendStep:
    m, report = run.manifest, run.report
    score = report.uncertainty.get("score") if report.uncertainty else None
    if isinstance(score, dict):
        mean, low, high, n = float(score["mean"]), float(score["low"]), float(score["high"]), int(score["n"])
        text = str(score.get("text", f"{mean:.2f}"))
    else:
        mean, low, high, n, text = report.overall, None, None, report.n, f"{report.overall:.3f}"
    p = m.provenance
    return TrendStep(
        run_id=m.run_id,
        created=m.created,
        mean=mean,
        low=low,
        high=high,
        score=text,
        n=n,
        who=who,
        commit=(p.git_commit or "")[:12],
        branch=p.git_branch or "",
        label=m.label,
    )


def _against(before: Run, run: Run, step: TrendStep) -> TrendStep:
    try:
        x = compare(*pair(before, run))
    except ComparisonError as exc:
        return replace(step, note=str(exc))
    words = dict.fromkeys(CHANGE_WORDS[c.key] for c in x.what_changed if c.key in CHANGE_WORDS)
    return replace(step, changed=tuple(words), verdict=x.verdict)
