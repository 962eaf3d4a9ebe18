"""The report of a run as text: its score with a 95% interval and n, per-family rows, the stub's
and a trivial baseline's scores on the same cases, the smallest difference this split
can detect, flaky cases under repeats, the task's metrics, the worst cases, cache use,
and where to look next (`runs show`); and the run's page.

Nothing here computes a figure: `evals.analysis.annotate` puts the uncertainty block into
the run's `Report`, and `print_report` prints the table from that record, so the table,
`--json` and report.json carry the same figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attest.text import printable
from evals.analysis.tokens import PriceList, cost_text, tokens_text
from evals.engine.execute import RunOutcome
from evals.render.judge_status import judge_line
from evals.store.protocols import Runs
from evals.store.records import write_atomic

__all__ = ["not_beaten", "print_report", "write_run_page"]

FLAKY_SHOWN = 10


def write_run_page(
    outcome: RunOutcome,
    store: Runs,
    page_dir: Path,
    texts: Mapping[tuple[str, int], str | None],
    warnings: Sequence[str],
    prices: PriceList | None = None,
) -> Path:
    """report.html in `page_dir` (the store's place for the run's page, or for a team's store a place in the
    local cache), from the run's records; returns its path."""
    from evals.render.pages import prompts_of, run_html  # deferred: Jinja2 and matplotlib

    m = outcome.manifest
    cases = {c.id: c.model_dump(mode="json") for c in outcome.spec.cases} if outcome.spec else {}
    line = judge_line(store, m)
    page = run_html(m, outcome.report, prompts_of(store, outcome.run_id), texts, cases, warnings, prices, line)
    path = page_dir / "report.html"
    write_atomic(path, page)
    return path


def print_report(
    outcome: RunOutcome,
    run_dir: Path | str,
    *,
    worst: int = 5,
    degenerate: Sequence[str] = (),
    hint: str = "",
    prices: PriceList | None = None,
    judged_by: str = "",
) -> None:
    """The human-readable report, from `outcome.report` (annotate it first for the uncertainty rows);
    `degenerate` warnings are printed under the headline; `hint` is the options the `runs show` line carries;
    `judged_by` is a judged run's judge and its validation."""
    result, stats, manifest, block = outcome.result, outcome.stats, outcome.manifest, outcome.report.uncertainty
    latency = f"{result.median_latency:.3f} s" if result.median_latency is not None else "n/a"
    print(
        f"{result.task} eval, {manifest.split} split, {manifest.backend} {printable(manifest.model)} "
        f"(run {outcome.run_id}, prompt {manifest.provenance.prompt_fingerprint[:12]})"
    )
    plain = [f"  mean score      {result.overall:.3f} over {result.n} samples (no interval: not annotated)"]
    lines = _uncertainty_lines(block) if block else plain
    print(lines[0])
    for warning in degenerate:
        print(f"  WARNING         {printable(warning)}")
    for line in lines[1:]:
        print(line)
    for line in judged_lines(outcome.report.judged, judged_by):
        print(line)
    print(f"  median latency  {latency} (recorded at generation)")
    print(f"  cache           {stats.hits} hits, {stats.misses} misses, {stats.seconds:.2f} s generating")
    print(f"  tokens          {tokens_text(stats.tokens, stats.samples)}")
    cost = cost_text(manifest.backend, manifest.model, stats.tokens, prices)
    if cost is not None:
        print(f"  cost            {printable(cost)}")
    for line in producer_lines(stats.workers, stats.servers):
        print(line)
    for line in _summary_lines(result.summary, block.get("verdicts")):
        print(line)
    shown = [r for r in result.worst(worst) if r.score < 1.0] if worst else []
    if shown:
        print("  worst cases:")
    for r in shown:
        print(f"    {r.score:.2f}  {r.id}#{r.sample}: {printable('; '.join(r.errors) or '(no errors)')}")
    shown_at = run_dir / "report.json" if isinstance(run_dir, Path) else f"run {outcome.run_id} in {run_dir}"
    print(f"  report          {printable(str(shown_at))}")
    print(f"  answers         python -m evals.runs{printable(hint)} show {outcome.run_id}")


def judged_lines(judged: dict[str, Any], judged_by: str = "") -> list[str]:
    """The `judged` line (the judged pass rate beside the rule score, never in its place), the judge and whether
    judge_check validated it, and the judge stage's cache use."""
    from evals.analysis.judged import judged_estimate  # deferred: scipy, for judged runs only

    found = judged_estimate(judged) if judged else None
    if found is None:
        return []
    estimate, method = found
    judge = judged["judge"]
    who = f"{judge['backend']} {judge['model']} (judge prompt {judge['prompt_fingerprint'][:12]})"
    lines = [
        f"  judged          {estimate.format()} cases, {judged['samples']} samples (95%, {method}): "
        "the judge's pass rate, beside the rule score",
        f"  judge           {printable(judged_by or who)}; it decides in `compare --metric judged` only when validated",
    ]
    cache = judged.get("generate")
    if cache:
        lines.append(
            f"  judge cache     {cache['hits']} hits, {cache['misses']} misses, {cache['seconds']:.2f} s judging"
        )
    unparseable = judged.get("unparseable", [])
    if unparseable:
        shown = ", ".join(unparseable[:5]) + (f" and {len(unparseable) - 5} more" if len(unparseable) > 5 else "")
        lines.append(f"  unparseable     {len(unparseable)} judgement(s) counted as fail: {printable(shown)}")
    return lines


def producer_lines(workers: dict[str, int], servers: dict[str, int]) -> list[str]:
    """Who produced the run's samples: each worker (user@host pid) and each model server, with a count."""
    lines = [f"  worker          {printable(w)}: {n} samples" for w, n in workers.items()]
    return lines + [f"  model server    {printable(s)}: {n} samples" for s, n in servers.items()]


def _uncertainty_lines(block: dict[str, Any]) -> list[str]:
    score = block["score"]
    lines = [f"  score           {score['text']} cases, {block['samples']} samples (95%, {score['method']})"]
    for b in block["baselines"]:
        diff = b["difference"]["text"].rsplit(" n=", 1)[0]
        lines.append(f"  {b['name']:<15} {b['text']}   model - {b['name']} {diff}")
        lines.append(f"  {'':<15} {printable(b['answer'])}")
        if not_beaten(b):
            lines.append(f"  {'':<15} the model does not beat the best cheap strategy (model - trivial is not above 0)")
    d = block["detectable"]
    lines.append(f"  detectable      {d['text']}: the smallest true difference that `compare` on these")
    lines.append(
        "                  cases ships 80% of the time, if the other run is as spread as this one and uncorrelated"
    )
    lines.extend(_family_lines(block["families"], [b["name"] for b in block["baselines"]]))
    if "repeats" in block:
        lines.extend(_repeat_lines(block["repeats"]))
    return lines


def not_beaten(row: Mapping[str, Any]) -> bool:
    """Whether a baseline row is the trivial floor and the model's paired difference from it is not above 0."""
    return row.get("name") == "trivial" and not row.get("difference", {}).get("low", 0.0) > 0


def _family_lines(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> list[str]:
    width = max([len(r["text"].rsplit(" n=", 1)[0]) for r in rows] + [5])
    head = "".join(f"  {name:>7}" for name in names)
    lines = [f"  by family       {'n':>4}  {'score':<{width}}{head}"]
    for r in rows:
        text = r["text"].rsplit(" n=", 1)[0]
        others = "".join(f"  {r['baselines'][name]:>7.2f}" for name in names)
        lines.append(f"    {printable(r['family']):<13} {r['n']:>4}  {text:<{width}}{others}")
    return lines


def _repeat_lines(rep: dict[str, Any]) -> list[str]:
    flaky = rep["flaky"]
    more = len(flaky) - FLAKY_SHOWN
    named = ", ".join(flaky[:FLAKY_SHOWN]) + (f" and {more} more" if more > 0 else "")
    lines = [
        f"  repeats         {rep['k']} samples per case; {len(flaky)} of {rep['cases']} cases flaky"
        + (f" (samples disagree): {named}" if flaky else " (every case's samples agree)")
    ]
    if rep["within"] is not None:
        share = "" if rep.get("within_share") is None else f" ({rep['within_share']:.0%} of the total)"
        lines.append(f"  variance        within cases {rep['within']:.3g}{share}, between cases {rep['between']:.3g}")
    return lines


# The task's summary keys as a reader says them (report.json and --json keep the keys); any other key
# is shown with its underscores as spaces.
_WORDS = {
    "n": "answers scored",
    "auc_verdict": "AUC, verdict",
    "auc_confidence": "AUC, confidence",
    "invalid": "invalid answers",
    "confidence_histogram": "confidences",
    "refusals_correct": "right refusals",
    "refusals_expected": "refusals due",
    "false_refusals": "wrong refusals",
}


def _words(key: str) -> str:
    return _WORDS.get(key, key.replace("_", " "))


def _summary_lines(summary: dict[str, Any], verdicts: dict[str, Any] | None) -> list[str]:
    lines = []
    for key, value in summary.items():
        name = printable(_words(key))
        if verdicts is not None and key in ("precision", "recall"):
            shown = verdicts[key]["text"] if verdicts[key] else "n/a"
            lines.append(f"  {name:<15} {shown} (an unparseable answer counts as the wrong verdict)")
        elif key == "confidence_histogram" and isinstance(value, dict):
            shown = ", ".join(f"{printable(str(k)).replace('-', ' at ')}: {v}" for k, v in value.items())
            lines.append(f"  {name:<15} {shown or '(none)'} (verdict at confidence: answers)")
        else:
            lines.append(f"  {name:<15} {_fmt(value)}")
    return lines


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}"  # no interval to size it by: two decimals
    if isinstance(value, dict):
        return "  ".join(f"{k}:{v}" for k, v in value.items()) or "(empty)"
    return printable(str(value))
