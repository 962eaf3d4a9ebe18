"""Re-score past runs with today's scorers, from the cache alone.

`python -m evals.rescore` scores the latest complete run of every task (or `--run
ID`, or `--all` runs) and shows each run's old and new score side by side. It builds
no backend and no HTTP client: there is nothing here that could call a model. A
sample missing from the cache is an error, never a model request.

It checks what it re-scores: when the corpus it reads differs from the one the run
recorded, or the scorer's source changed since the run's report, it says so in one
line per run and reports with the labels it used. A run that cannot be re-scored (its
records unreadable, its cases gone from the corpus, its samples gone from the cache) is
skipped with one line and the others are re-scored. Exit status: 0 when every run was
re-scored (changes are reported, not errors), 1 on an error or a skipped run, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attest.errors import AttestError, run_reporting_errors
from attest.text import printable
from evals import tasks
from evals.cli.rescore_options import judge_identity
from evals.cli.rescore_options import rescore_parser as _parser
from evals.cli.rescoring import Rescored, rescore_run, some
from evals.cli.rescoring import under_today_scorer as by_today  # both runs are re-scored by it
from evals.engine.pipeline import EvalResult
from evals.render.rescore_rows import judged_rate, print_rows
from evals.store.models import Decision, Manifest, Report
from evals.store.open import open_store
from evals.store.protocols import Answers, Runs, WritesRefused
from evals.store.records import RunError
from evals.store.refs import list_runs
from evals.store.settings import resolve_cache_dir, resolve_store_url

__all__ = ["find_runs", "main", "recheck_decisions"]


def find_runs(
    store: Runs, *, run_id: str | None = None, every: bool = False, skipped: list[str] | None = None
) -> list[Manifest]:
    """The runs to re-score: one named run, all complete runs, or the latest complete run per task (from
    `runs list`'s rows: one statement on a shared store). An unreadable run is left out, said in `skipped`."""
    if run_id is not None:
        return [store.manifest(run_id)]
    said = [] if skipped is None else skipped
    if every:
        every_run = _manifests(store, said, store.run_ids())
        return [m for m in every_run if m.status == "complete" and m.task in tasks.names()]
    latest: dict[str, str] = {}
    for row in list_runs(store):  # newest first
        if row.summary is None:
            said.append(_skip_line(row.run_id, RunError(row.problem)))
        elif row.summary.status == "complete" and row.summary.task in tasks.names():
            latest.setdefault(row.summary.task, row.run_id)
    return _manifests(store, said, list(latest.values()))


def _manifests(store: Runs, skipped: list[str], run_ids: list[str]) -> list[Manifest]:
    found = []
    for run_id in run_ids:
        try:
            found.append(store.manifest(run_id))
        except RunError as exc:  # `runs list` shows it as unreadable; `runs prune --incomplete` removes it
            skipped.append(_skip_line(run_id, exc))
    return found


def _skip_line(run_id: str, exc: AttestError) -> str:
    return f"rescore: skipped {run_id}: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.corpus is not None and args.run is None:
        parser.error("--corpus names one task's labels: give it with --run ID")
    return run_reporting_errors("rescore", lambda: _rescore(args))


def _rescore(args: argparse.Namespace) -> int:
    opened = open_store(resolve_store_url(args.store, args.store_file), resolve_cache_dir(args.cache_dir))
    try:
        skipped: list[str] = []
        manifests = find_runs(opened.runs, run_id=args.run, every=args.all, skipped=skipped)
        for line in skipped:
            print(printable(line), file=sys.stderr)
        if not manifests:
            raise AttestError(f"no complete runs in {opened.where}: run an eval first (nox -s eval-reaction)")
        args.judge = judge_identity(args, _manifests(opened.runs, [], opened.runs.run_ids()))
        return _rescore_runs(manifests, opened.runs, opened.answers, args)
    finally:
        opened.close()


def _rescore_runs(manifests: list[Manifest], store: Runs, cache: Answers, args: argparse.Namespace) -> int:
    start = time.perf_counter()
    rows = []
    rescored: dict[str, Rescored] = {}
    failed = 0
    unsaved: WritesRefused | None = None
    for manifest in manifests:
        try:
            done = rescore_run(manifest, cache, args.corpus, args.judge, paths_local=store.paths_local)
            old = store.report(manifest.run_id)
        except AttestError as exc:
            if args.run is not None:
                raise  # the one run asked for: its error is the answer
            print(printable(_skip_line(manifest.run_id, exc)), file=sys.stderr)
            failed += 1
            continue  # one bad run does not stop the others: they are re-scored, and the exit status is 1
        moved = _moved(old, done.result)
        if moved:
            done = dataclasses.replace(done, changes=[*done.changes, f"scores moved: {moved}"])
        rescored[manifest.run_id] = done
        if unsaved is None:
            try:
                store.save(manifest.run_id, "rescore", done.report())
            except WritesRefused as exc:  # a read-only role: the scores are the answer, the record a by-product
                unsaved = exc
        rows.append(_row(done, old))
    decisions = recheck_decisions(store, cache, rescored, args.corpus)
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({"runs": rows, "decisions": decisions, "seconds": seconds}, indent=1))
    else:
        print_rows(rows, seconds)
        for found in decisions:
            print(printable(found["line"]))
    for warning in cache.warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)
    if unsaved is not None:
        print(f"warning: the re-scores above were not saved: {printable(str(unsaved))}", file=sys.stderr)
    return 1 if failed else 0


def recheck_decisions(
    store: Runs, cache: Answers, rescored: dict[str, Rescored], corpus: Path | None = None
) -> list[dict[str, Any]]:
    """Every decision recorded beside a re-scored run, recomputed from the cache alone.

    The baseline is re-scored too (with the same labels) when it was not among the runs;
    the verdict is recomputed with the recorded margin. Each entry says whether it is
    unchanged, or what it would now be, and carries its one printed line.
    """
    found = [
        (run_id, store.load(run_id, "decision", Decision)) for run_id in rescored if store.exists(run_id, "decision")
    ]
    if not found:
        return []
    from evals.analysis.pairing import Run, recheck, recheck_line  # statistics (scipy) only when there is a decision

    out = []
    for run_id, decision in found:
        cand = rescored[run_id]
        try:
            base = rescored.get(decision.baseline_run) or rescore_run(
                store.manifest(decision.baseline_run), cache, corpus, paths_local=store.paths_local
            )
            ms = [by_today(r.manifest) for r in (base, cand)]
            runs = [Run(m, dataclasses.replace(r, manifest=m).report()) for r, m in zip((base, cand), ms, strict=True)]
            entry = recheck(decision, runs[0], runs[1])
        except AttestError as exc:
            entry = {"candidate_run": run_id, "baseline_run": decision.baseline_run, "problem": str(exc)}
        out.append({**entry, "line": recheck_line(entry)})
    return out


def _moved(old: Report | None, new: EvalResult) -> str:
    """The cases whose mean score differs from the run's report: `id old -> new`, a few named."""
    if old is None:
        return ""
    before: dict[str, list[float]] = {}
    for row in old.results:
        before.setdefault(str(row["id"]), []).append(float(row["score"]))
    now = new.by_case()
    moved = [
        f"{cid} {sum(b) / len(b):.2f} -> {now[cid]:.2f}"
        for cid, b in before.items()
        if cid in now and abs(sum(b) / len(b) - now[cid]) > 1e-9
    ]
    return some(moved)


def _row(done: Rescored, old: Report | None) -> dict[str, Any]:
    row = {
        "run_id": done.manifest.run_id,
        "task": done.manifest.task,
        "samples": done.result.n,
        "old": old.overall if old else None,
        "new": done.result.overall,
        "corpus": str(done.corpus),
        "changes": done.changes,
    }
    if done.judged is not None:
        row["judged"] = {"old": judged_rate(old.judged) if old else None, "new": judged_rate(done.report().judged)}
    return row


if __name__ == "__main__":
    raise SystemExit(main())
