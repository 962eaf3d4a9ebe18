"""The printed report of a run: score, task metrics, worst cases, cache use, and where
to look next (`runs show`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attest.text import printable
from evals.execute import RunOutcome

__all__ = ["print_report"]


def print_report(outcome: RunOutcome, run_dir: Path, *, worst: int = 5) -> None:
    """The human-readable report: score, worst cases, latency, cache, task metrics."""
    result, stats, manifest = outcome.result, outcome.stats, outcome.manifest
    latency = f"{result.median_latency:.3f} s" if result.median_latency is not None else "n/a"
    print(
        f"{result.task} eval, {manifest.split} split, {manifest.backend} {manifest.model} "
        f"(run {outcome.run_id}, prompt {manifest.provenance.prompt_fingerprint[:12]})"
    )
    print(f"  mean score      {result.overall:.3f} over {result.n} samples")
    print(f"  median latency  {latency} (recorded at generation)")
    print(f"  cache           {stats.hits} hits, {stats.misses} misses, {stats.seconds:.2f} s generating")
    for key, value in result.summary.items():
        print(f"  {key:<15} {_fmt(value)}")
    shown = [r for r in result.worst(worst) if r.score < 1.0] if worst else []
    if shown:
        print("  worst cases:")
    for r in shown:
        print(f"    {r.score:.2f}  {r.id}#{r.sample}: {printable('; '.join(r.errors) or '(no errors)')}")
    print(f"  report          {run_dir / 'report.json'}")
    print(f"  answers         python -m evals.runs show {outcome.run_id}")


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return "  ".join(f"{k}:{v}" for k, v in value.items()) or "(empty)"
    return printable(str(value))
