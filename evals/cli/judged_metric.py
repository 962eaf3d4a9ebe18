"""`compare --metric judged`: decide on the judged score, only for a judge measured against people.

Both runs must be judged (`--judge-backend` when they ran), by one judge (identity and judge
prompt: a judge change between the runs is a confounder, like a scorer change), and that
judge must have a `judge_check` validation on today's judgement corpus with kappa's lower
bound at least the threshold. Otherwise the comparison is withheld: inconclusive, exit 3,
with one line saying why and the `judge_check` command to run. When it may decide, each
run's report is replaced by its judged grades (pass 1, fail 0) and compared as usual.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from attest.text import printable
from evals.analysis.pairing import Run
from evals.render.judge_status import judge_check_command, judge_status
from evals.store.protocols import Runs

__all__ = ["judged_pair", "judged_runs"]


def judged_pair(store: Runs, runs: tuple[Run, Run], *, as_json: bool) -> tuple[Run, Run] | None:
    """`compare --metric judged`: both runs scored by their judgements (the judge named on stdout, or stderr
    beside JSON), or None after printing why the judged score cannot decide (JSON with `as_json`)."""
    judged = judged_runs(store, *runs)
    if isinstance(judged, str):
        withheld = {"metric": "judged", "verdict": "inconclusive", "withheld": judged, "exit_code": 3}
        print(json.dumps(withheld, indent=1) if as_json else printable(f"compare: inconclusive: {judged}"))
        return None
    print(printable(f"metric      judged score, {judged[2]}"), file=sys.stderr if as_json else sys.stdout)
    return judged[0], judged[1]


def judged_runs(store: Runs, base: Run, cand: Run) -> tuple[Run, Run, str] | str:
    """Both runs scored by their judgements and the judge's line, or why the judged score cannot decide."""
    statuses = [judge_status(store, run.manifest) for run in (base, cand)]
    unjudged = [run.run_id for run, s in zip((base, cand), statuses, strict=True) if s is None]
    if unjudged:
        return (
            f"run {', '.join(unjudged)} was not judged, so there is no judged score: rerun its eval with "
            "--judge-backend B --judge-model M (the answers come from the cache), or compare --metric score"
        )
    b, c = statuses
    assert b is not None and c is not None
    if b.judge != c.judge:
        return (
            f"the judge differs between the runs ({b.line()} / {c.line()}), a confounder like a scorer change: "
            "judge both runs with one judge (rerun each eval with the same --judge-backend and --judge-model: the "
            "answers come from the cache); `rescore --run ID --judge-backend B --judge-model M` shows a run under "
            "another judge from its cached judgements"
        )
    if not b.validated:
        return (
            f"the judged score decides only for a validated judge; judge {b.line()}: "
            f"run `{judge_check_command(base.manifest.task, b.judge)}` (exit 0 validates it)"
        )
    return _scored(base), _scored(cand), f"judged by {b.line()}"


def _scored(run: Run) -> Run:
    """The run with its judged grades as its per-sample scores (pass 1, fail 0)."""
    rows = [
        {
            "id": r["id"],
            "sample": r["sample"],
            "score": 1.0 if r["passed"] else 0.0,
            "errors": [] if r["passed"] else [r["reason"]],
        }
        for r in run.report.judged["results"]
    ]
    overall = sum(r["score"] for r in rows) / len(rows) if rows else 0.0
    return replace(run, report=run.report.replace(results=rows, overall=overall))
