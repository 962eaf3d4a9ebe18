"""`runs show`: a run's provenance and prompts, then each case's answer, score and errors."""

from __future__ import annotations

import json
import time
from typing import Any

from attest.text import printable, printable_json
from evals.store.models import Manifest, Prompts
from evals.store.protocols import Answers, Runs
from evals.store.records import RunError

__all__ = ["show_run"]


def show_run(store: Runs, cache: Answers, run_id: str, *, case: str | None = None, as_json: bool = False) -> str:
    manifest = store.manifest(run_id)
    report = store.report(run_id)

    prompts = store.load(run_id, "prompts", Prompts).system if store.exists(run_id, "prompts") else {}
    samples = [s for s in manifest.samples if case is None or s.case == case]
    if case is not None and not samples:
        raise RunError(f"run {run_id} has no case {case!r}")
    answers = cache.get_many([s.key for s in samples])
    inputs, gold = _case_fields(manifest, case) if case is not None else ({}, {})
    scored = {(r["id"], r["sample"]): r for r in (report.results if report else [])}
    judged = {(r["id"], r["sample"]): r for r in (report.judged.get("results", []) if report else [])}
    rows = []
    for s in samples:
        entry = answers[s.key]
        result = scored.get((s.case, s.sample), {})
        rows.append(
            {
                "case": s.case,
                "sample": s.sample,
                "answer": entry.text if entry else None,
                "score": result.get("score"),
                "errors": result.get("errors", []),
                "details": result.get("details", {}),
                **({"inputs": inputs, "gold": gold} if case is not None else {}),
                **_judged(judged.get((s.case, s.sample))),
            }
        )
    if as_json:
        data = {"manifest": manifest.to_dict(exclude=frozenset({"samples"})), "prompts": prompts, "cases": rows}
        return printable_json(json.dumps(data, indent=1, ensure_ascii=False))  # as safe as the text output
    lines = [*_header(manifest, report.overall if report else None, prompts), *_judge(store, manifest), *_cases(rows)]
    return "\n".join(printable(line) for line in lines)  # every field of a hand-edited run, made safe


def _judged(row: dict[str, Any] | None) -> dict[str, Any]:
    return {} if row is None else {"judged": "pass" if row["passed"] else "fail", "judge_reason": row["reason"]}


def _judge(store: Runs, m: Manifest) -> list[str]:
    """A judged run's judge and whether judge_check validated it."""
    if m.judge is None:
        return []
    from evals.render.judge_status import judge_line  # the task registry: judged runs only

    return [f"  judge       {judge_line(store, m)}"]


def _header(m: Manifest, overall: float | None, prompts: dict[str, str]) -> list[str]:
    p = m.provenance
    score = "not scored" if overall is None else f"{overall:.3f}"
    lines = [
        f"run {m.run_id}: {m.task}, {m.split} split, {m.status}, score {score}",
        f"  created     {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(m.created))}",
        f"  model       {m.backend} {printable(m.model)} digest {m.digest[:16] or '(none)'}",
        f"  options     {json.dumps(m.options, sort_keys=True)}; repeat {m.repeat}",
        f"  prompt      {p.prompt_fingerprint}",
        f"  scorer      {p.scorer_fingerprint}",
        f"  corpus      {p.corpus} " + " ".join(f"{k}:{v[:12]}" for k, v in sorted(p.corpus_sha256.items())),
        f"  code        attest {p.attest_version}, commit {p.git_commit or 'n/a'}"
        + (" (uncommitted changes)" if p.git_dirty else ""),
    ]
    if p.tag_prompt_path:
        lines.append(f"  tag prompt  {p.tag_prompt_path} sha256 {p.tag_prompt_sha256 or 'unreadable'}")
    for sha, text in prompts.items():
        lines.append(f"  system prompt {sha[:12]}:")
        lines.extend(f"    | {printable(line)}" for line in text.splitlines())
    return lines


def _case_fields(manifest: Manifest, case: str) -> tuple[dict[str, str], dict[str, str]]:
    """The case's inputs and gold from the corpus the run recorded (both empty when it cannot be read)."""
    from evals.render.page_run import split_case
    from evals.render.pages import corpus_cases

    return split_case(corpus_cases(manifest).get(case, {}))


def _cases(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in rows:
        score = "  -  " if row["score"] is None else f"{row['score']:.2f}"
        lines.append(f"{score}  {row['case']}#{row['sample']}")
        lines += [f"      input   {k}: {printable(' '.join(v.split()))}" for k, v in row.get("inputs", {}).items()]
        lines += [f"      gold    {k}: {printable(v)}" for k, v in row.get("gold", {}).items()]
        answer = "(not in the cache)" if row["answer"] is None else printable(row["answer"])
        lines.append(f"      answer  {answer}")
        for error in row["errors"]:
            lines.append(f"      error   {printable(str(error))}")
        if "judged" in row:
            lines.append(f"      judged  {row['judged']}: {printable(str(row['judge_reason']))}")
    return lines
