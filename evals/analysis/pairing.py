"""Two recorded runs made ready for `evals.analysis.comparison`: checked, paired, decided and re-checked.

`load_run` reads a complete run (manifest and report); `pair` refuses runs of different
tasks, different splits (unless allowed) and shared cases whose inputs or label changed
(each manifest records every case's sha256), and turns both runs into `RunScores` with
each case's family (from the corpus file the run recorded) and the provenance that
`compare` lists as what changed. `decide` is the optimiser's gate, recorded beside the
candidate run; `recheck` recomputes a recorded decision over re-scored runs (rescore).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attest.errors import AttestError
from attest.files import read_text_bounded
from evals.analysis.comparison import Comparison, ComparisonError, Floor, RunScores, compare
from evals.analysis.paired import verdict_decimals
from evals.corpus.paths import resolve_corpus
from evals.store.models import Decision, Manifest, Prompts, Report
from evals.store.protocols import Runs

_MAX_CORPUS_BYTES = 5 << 20  # evals.corpus.read's cap (not imported: the corpus layer costs start-up here)

__all__ = ["UNKNOWN", "Run", "decide", "load_run", "pair", "recheck", "recheck_line", "scores_of"]

UNKNOWN = "unknown"  # the family of a case the run's corpus file no longer holds
# a backend's own server settings (the local backend's threads, slots, servers), recorded under this key of
# its options: they are part of the model's identity, not sampling options, so they count as a model change
SERVER = "server"


@dataclass(frozen=True)
class Run:
    """A complete run: its manifest and its report (or a re-scored report)."""

    manifest: Manifest
    report: Report
    prompts: tuple[str, ...] = ()  # the system prompts it sent (prompts.json), in the manifest's order
    paths_local: bool = True  # False: from a shared store, whose recorded corpus path is never opened here

    @property
    def run_id(self) -> str:
        return self.manifest.run_id


def load_run(store: Runs, run_id: str) -> Run:
    """The run's records; a run without a report (never completed) is refused in one line."""
    manifest = store.manifest(run_id)
    report = store.report(run_id)
    if report is None or manifest.status != "complete":
        why = f"status {manifest.status}" + ("" if report else ", no report")
        raise ComparisonError(
            f"run {run_id} is not complete ({why}), so it cannot be compared: "
            "rerun its eval or pick a complete run (`python -m evals.runs list`)"
        )
    return Run(manifest, report, _prompts(store, run_id, manifest), store.paths_local)


def _prompts(store: Runs, run_id: str, manifest: Manifest) -> tuple[str, ...]:
    """The run's system prompt texts in the manifest's order; () when prompts.json is absent."""
    if not store.exists(run_id, "prompts"):
        return ()
    texts = store.load(run_id, "prompts", Prompts).system
    return tuple(texts.get(sha, f"(prompt {sha} not recorded)") for sha in manifest.provenance.system_prompts)


def pair(base: Run, cand: Run, *, allow_split_mismatch: bool = False) -> tuple[RunScores, RunScores]:
    """Both runs as `RunScores`, after checking they can be paired: one task, one split, the same cases."""
    b, c = base.manifest, cand.manifest
    if b.run_id == c.run_id:
        raise ComparisonError(
            f"run {b.run_id} is compared with itself (both records say {b.run_id}): "
            "name two different runs (`python -m evals.runs list`)"
        )
    if b.task != c.task:
        raise ComparisonError(f"run {b.run_id} is a {b.task} run and run {c.run_id} a {c.task} run: compare one task")
    if b.split != c.split and not allow_split_mismatch:
        raise ComparisonError(
            f"run {b.run_id} is on the {b.split} split and run {c.run_id} on the {c.split} split: "
            "compare runs of one split, or pass --allow-split-mismatch to pair the cases they share"
        )
    if _subset(b) != _subset(c) and not allow_split_mismatch:
        raise ComparisonError(
            f"run {b.run_id} ran {_subset(b)} and run {c.run_id} {_subset(c)}: compare like with like, "
            "or pass --allow-split-mismatch to pair only the cases they share"
        )
    _check_cases(b, c)
    families: dict[str, dict[str, str]] = {}
    return scores_of(base, families), scores_of(cand, families)


def _subset(m: Manifest) -> str:
    """Which of its split's cases a run ran: all, a `--limit` subset or `--case` ids."""
    parts = [f"--limit {m.limit}"] if m.limit is not None else []
    parts += [f"--case {', '.join(m.only)}"] if m.only else []
    return " ".join(parts) or f"the whole {m.split} split"


def _check_cases(b: Manifest, c: Manifest) -> None:
    shared = b.case_sha256.keys() & c.case_sha256.keys()
    changed = sorted(case for case in shared if b.case_sha256[case] != c.case_sha256[case])
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        raise ComparisonError(
            f"case {changed[0]}{more}: the inputs or label differ between run {b.run_id} and run {c.run_id} "
            "(the corpus changed between them): re-run the baseline on today's corpus"
        )


def scores_of(run: Run, families: dict[str, dict[str, str]] | None = None) -> RunScores:
    """A run's per-sample scores by case, with its families, case hashes and provenance.

    `families` memoises corpus files by recorded path, so two runs of one corpus read it once.
    """
    samples: dict[str, list[float]] = {}
    for result in run.report.results:
        samples.setdefault(str(result["id"]), []).append(float(result["score"]))
    memo = {} if families is None else families
    ref = run.manifest.provenance.corpus
    if not run.paths_local:
        ref = ""  # another machine's path: families are for display only, so none are read
        memo.setdefault(ref, {})
    if ref not in memo:
        memo[ref] = _families(resolve_corpus(ref))
    family = {case: memo[ref].get(case, UNKNOWN) for case in samples}
    m = run.manifest
    return RunScores(
        m.task,
        m.run_id,
        samples,
        family,
        {},
        dict(m.case_sha256),
        _provenance(m),
        run.prompts,
        dict(m.request_sha256),
        _floor(run.report),
    )


def _floor(report: Report) -> Floor | None:
    """The best cheap strategy's mean on the run's cases, from its report's baselines (None when not annotated)."""
    for row in report.uncertainty.get("baselines", []):
        if isinstance(row, dict) and row.get("name") == "trivial":
            low = row.get("difference", {}).get("low")
            return Floor(float(row["mean"]), str(row.get("answer", "")), isinstance(low, int | float) and low > 0)
    return None


def _families(path: Path) -> dict[str, str]:
    """case id -> family from a corpus file; {} when it cannot be read (families are for display only)."""
    try:
        data = json.loads(read_text_bounded(path, _MAX_CORPUS_BYTES))
    except (AttestError, ValueError):  # the path is a record's: a FIFO or /dev/zero is refused, not read
        return {}
    if not isinstance(data, list):
        return {}
    return {str(c["id"]): str(c["family"]) for c in data if isinstance(c, dict) and "id" in c and c.get("family")}


def _provenance(m: Manifest) -> dict[str, object]:
    p = m.provenance
    commit = None if p.git_commit is None else p.git_commit + (" (dirty)" if p.git_dirty else "")
    options = {k: v for k, v in m.options.items() if k != SERVER}
    judge = {"judge": _judge_text(m)} if m.judge is not None else {}  # a judge change shows, as a scorer change does
    return {
        **judge,
        "backend": m.backend,
        "model": m.model,
        "digest": m.digest,
        "server": json.dumps(m.options[SERVER], sort_keys=True) if SERVER in m.options else None,
        "options": json.dumps(options, sort_keys=True),
        "label": m.label,
        "repeat": m.repeat,
        "split": m.split,
        "prompt_fingerprint": p.prompt_fingerprint,
        "system_prompts": ", ".join(p.system_prompts),
        "tag_prompt_sha256": p.tag_prompt_sha256,
        "scorer_fingerprint": p.scorer_fingerprint,
        "corpus": p.corpus,
        "corpus_sha256": p.corpus_sha256.get(m.split, json.dumps(p.corpus_sha256, sort_keys=True)),
        "git_commit": commit,
        "attest_version": p.attest_version,
    }


def _judge_text(m: Manifest) -> str:
    j = m.judge
    assert j is not None
    options = json.dumps(j.options, sort_keys=True)
    return f"{j.backend} {j.model} {j.digest or '(no digest)'} {options} judge prompt {j.prompt_fingerprint[:12]}"


def decide(base: Run, cand: Run, *, margin: float) -> tuple[Comparison, Decision]:
    """A gate: the paired verdict of `cand` against `base`, as the `decision` record to keep beside the
    candidate run (its caller saves it: analysis writes to no store).

    The same rule as `compare`: a confounded pair, or a prompt change on the stub, is inconclusive.
    """
    x = compare(*pair(base, cand), margin=margin)
    interval = x.paired.interval
    decision = Decision(
        baseline_run=base.run_id,
        candidate_run=cand.run_id,
        margin=margin,
        verdict=x.verdict,
        mean_difference=x.paired.mean_diff,
        interval=(interval.low, interval.high),
        p_value=x.paired.p_value,
        n=x.n,
        decided_at=time.time(),
    )
    return x, decision


def recheck(decision: Decision, base: Run, cand: Run) -> dict[str, Any]:
    """A recorded decision recomputed over (re-scored) runs, with the margin it was taken against."""
    x = compare(*pair(base, cand, allow_split_mismatch=True), margin=decision.margin)
    return {
        "candidate_run": decision.candidate_run,
        "baseline_run": decision.baseline_run,
        "margin": decision.margin,
        "recorded": decision.verdict,
        "now": x.verdict,
        "unchanged": x.verdict == decision.verdict,
        "difference": x.paired.difference.format(signed=True, decimals=verdict_decimals(x.paired.interval, x.margin)),
        "mean_difference": x.paired.mean_diff,
        "interval": [x.paired.interval.low, x.paired.interval.high],
        "p_value": x.paired.p_value,
    }


def recheck_line(found: Mapping[str, Any]) -> str:
    """One line for a re-checked decision: unchanged, or what it would now be."""
    head = f"decision on {found['candidate_run']} (baseline {found['baseline_run']}): "
    if "problem" in found:
        return head + f"cannot re-check it: {found['problem']}"
    said = (
        f"{found['now']}, unchanged" if found["unchanged"] else f"was {found['recorded']}, would now be {found['now']}"
    )
    return head + f"{said} ({found['difference']}, margin {found['margin']:g})"
