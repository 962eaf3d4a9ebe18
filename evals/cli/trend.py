"""`runs trend TASK`: a task's complete whole-split runs, oldest first, one line each (score with its
interval, n, who, commit, label, what changed from the run before, and SHIP / REGRESS where `compare`
would say so); `--html FILE` writes the same as a page with the score plotted over the runs.

`--branch`, `--label` narrow the runs as `branch=` and `label=` do in a reference; `--limit N` keeps
the newest N. Quick tries (`--limit`, `--case`) and unfinished runs are left out, as refs leave them.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

from attest.errors import AttestError
from attest.text import printable
from evals.analysis.pairing import Run, load_run
from evals.analysis.trend import TrendStep, trend
from evals.store.protocols import Runs

__all__ = ["run_trend", "step_line"]


def run_trend(store: Runs, cache_dir: Path, args: argparse.Namespace) -> int:
    """Print the trend of `args.task` in `store`; with `args.html`, also write its page."""
    from evals.store.refs import list_runs

    rows = [
        r.summary
        for r in list_runs(store, args.task)
        if r.summary is not None and r.summary.status == "complete" and not r.summary.subset
    ]
    rows = [s for s in rows if (args.branch is None or s.branch == args.branch)]
    rows = [s for s in rows if (args.label is None or s.label == args.label)]
    chosen = list(reversed(rows[: args.limit] if args.limit else rows))  # newest N, shown oldest first
    if not chosen:
        narrowed = "".join(f" {k}={v}" for k, v in (("branch", args.branch), ("label", args.label)) if v is not None)
        raise AttestError(f"no complete whole-split run of {args.task}{narrowed} to show a trend of")
    runs = [load_run(store, s.run_id) for s in chosen]
    steps = trend(runs, _who(store, runs))
    for step in steps:
        print(printable(step_line(step)))
    if args.html is not None:
        from evals.render.html import write_page
        from evals.render.page_trend import trend_html

        write_page(trend_html(args.task, steps, _pages(store, cache_dir, steps)), args.html)
        if args.html != "-":
            print(f"page        {args.html}")
    return 0


def step_line(step: TrendStep) -> str:
    """One run of the trend as a line of text."""
    changed = f"changed {', '.join(step.changed)}" if step.changed else ("first" if not step.verdict else "same")
    if step.note:
        changed = f"not comparable ({step.note})"
    cells = [
        step.run_id,
        step.score,
        f"by {step.who}",
        f"commit {step.commit or '-'}",
        f"label {step.label or '-'}",
        changed,
    ]
    return "  ".join(cells) + (f"  {step.flag}" if step.flag else "")


def _who(store: Runs, runs: Sequence[Run]) -> dict[str, str]:
    """user@host for each run: a team's store says who saved it; locally, the worker that made its answers."""
    authors = store.authors() or {}
    out = {}
    for run in runs:
        author = authors.get(run.run_id)
        if author is not None:
            out[run.run_id] = f"{author.user}@{author.host}"
            continue
        workers = [w for w in run.report.generate.get("workers", {}) if w != "unknown"]
        out[run.run_id] = re.sub(r" pid \d+$", "", workers[0]) if workers else "?"
    return out


def _pages(store: Runs, cache_dir: Path, steps: list[TrendStep]) -> dict[str, str]:
    """run id -> its page's file URI, where one was written (beside the run, or in the local cache's pages/)."""
    found = {}
    for step in steps:
        beside = store.page_dir(step.run_id)  # None: a team's store, whose pages are in the local cache
        candidates = [*([beside / "report.html"] if beside else []), cache_dir / "pages" / step.run_id / "report.html"]
        page = next((p for p in candidates if p.is_file()), None)
        if page is not None:
            found[step.run_id] = page.resolve().as_uri()
    return found
