"""What a run's score is worth: the uncertainty block of its report.

The block holds the mean with its 95% interval and n, per-family rows, the baselines
scored on the same cases (with the paired difference model - baseline), the smallest
paired difference a comparison on this split could detect, reaction's precision and
recall with their intervals, and, with repeats, the flaky cases and the split of the
variance within and between cases. Everything is plain JSON (`Report.uncertainty`),
printed by evals/render/report.py.

The case is the unit (Miller 2024, arXiv:2411.00640): a case's samples are averaged
before anything else, so n is the number of cases, never of samples. The interval
method is the task's (`Task.interval`), never chosen from one run's values: Wilson for
a task whose scores are 0 or 1 by construction (with one sample per case; with repeats
a case's mean is graded), else a seeded BCa bootstrap (evals/analysis/stats.py). Figures
are formatted to the precision the interval supports. Task-specific rows (reaction's
precision and recall) come from `Task.verdict_metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evals.analysis import paired, stats
from evals.analysis.baselines import Baseline
from evals.analysis.paired import MEAN_ALPHA
from evals.analysis.power import Detectable, minimum_detectable_effect
from evals.corpus.cases import Case
from evals.engine.pipeline import CaseResult
from evals.engine.task import Task

__all__ = [
    "ASSUMES",
    "block",
    "detectable",
    "estimate",
    "estimate_json",
    "family_rows",
    "interval_method",
    "repeats",
    "samples_by_case",
    "verdicts",
]

UNIT = "case: a case's samples are averaged first; n counts cases"
ASSUMES = (
    "the sd of paired differences is sqrt(2) x this run's per-case sd: a second run as spread as this one and "
    "uncorrelated with it (conservative: runs of similar prompts agree on most cases and detect smaller differences)"
)


def samples_by_case(results: Sequence[CaseResult]) -> dict[str, list[float]]:
    """Each case's sample scores, by case id, in the order the results hold them."""
    found: dict[str, list[float]] = {}
    for r in results:
        found.setdefault(r.id, []).append(r.score)
    return found


WILSON, BOOTSTRAP = "Wilson", "bootstrap BCa"


def interval_method(task: Task[Any], repeat: int = 1) -> str:
    """The task's interval method for a run of `repeat` samples per case: fixed before any score is seen."""
    return WILSON if task.interval == "wilson" and repeat == 1 else BOOTSTRAP


def estimate(values: Sequence[float], method: str) -> tuple[stats.Estimate, str]:
    """The mean of per-case scores with its interval by `method`, and the method as printed.

    Wilson refuses a score that is not 0 or 1 (the task said its scores are binary);
    the bootstrap is used for graded tasks even when one run's scores happen to be all 0/1.
    """
    arr = np.asarray(values, dtype=float)
    if method == WILSON and not stats.is_binary(arr):
        raise ValueError("the task declares 0/1 scores (Wilson intervals) but scored a case between 0 and 1")
    found = stats.mean_estimate(arr, binary=method == WILSON)
    if method == WILSON:
        return found, WILSON
    if arr.size and np.all(arr == arr[0]):
        return found, "none: every score is equal"
    return found, BOOTSTRAP if arr.size <= stats.BOOTSTRAP_MAX_N else "Student t"


def estimate_json(estimate: stats.Estimate, method: str = "", *, signed: bool = False) -> dict[str, Any]:
    """An estimate as JSON: mean, low, high, n, the interval's method and its house-format text."""
    i = estimate.interval
    out: dict[str, Any] = {"mean": estimate.mean, "low": i.low, "high": i.high, "n": estimate.n, "level": i.level}
    if method:
        out["method"] = method
    out["text"] = estimate.format(signed=signed)
    return out


def _mean_of(values: Sequence[float], method: str) -> dict[str, Any]:
    return estimate_json(*estimate(values, method))


def _baseline_row(baseline: Baseline, ids: Sequence[str], model: Sequence[float], method: str) -> dict[str, Any]:
    missing = [i for i in ids if i not in baseline.scores]
    if missing:
        raise ValueError(f"baseline {baseline.name} has no score for cases {missing[:5]}: score it on the same cases")
    base = [baseline.scores[i] for i in ids]
    difference = estimate_json(paired.difference(base, model), "adjusted Wald, paired", signed=True)
    return {"name": baseline.name, "answer": baseline.answer, **_mean_of(base, method), "difference": difference}


def family_rows(
    cases: Sequence[Case], means: Mapping[str, float], baselines: Sequence[Baseline] = (), method: str = BOOTSTRAP
) -> list[dict[str, Any]]:
    """One row per family of the scored cases, by name: n, mean and interval, and each baseline's mean."""
    members: dict[str, list[str]] = {}
    for case in cases:
        if case.id in means:
            members.setdefault(case.family, []).append(case.id)
    rows = []
    for family in sorted(members):
        ids = members[family]
        others = {b.name: float(np.mean([b.scores[i] for i in ids])) for b in baselines}  # as the mean beside it
        rows.append({"family": family, **_mean_of([means[i] for i in ids], method), "baselines": others})
    return rows


def detectable(model: Sequence[float], *, power: float = 0.8, alpha: float = MEAN_ALPHA) -> dict[str, Any]:
    """The minimum paired difference detectable at `power` on this many cases, under the `ASSUMES` spread,
    at the verdict's mean test level (`paired.MEAN_ALPHA`: `compare` decides at 97.5%)."""
    n = len(model)
    sd_cases = float(np.std(model, ddof=1)) if n > 1 else 0.0
    sd = math.sqrt(2.0) * sd_cases
    effect = minimum_detectable_effect(n, sd, alpha=alpha, power=power)
    shown = Detectable(effect, n, sd, "sd of differences", power)
    return {
        "effect": None if math.isinf(effect) else effect,
        "n": n,
        "power": power,
        "alpha": alpha,
        "sd_of_differences": sd,
        "sd_of_case_scores": sd_cases,
        "assumes": ASSUMES,
        "text": shown.format(),
    }


def repeats(samples: Mapping[str, Sequence[float]], repeat: int) -> dict[str, Any]:
    """Which cases' samples disagree, and the score variance within cases (sampling noise) and between them."""
    flaky = stats.flaky_cases(samples)
    out: dict[str, Any] = {"k": repeat, "cases": len(samples), "flaky": flaky, "within": None, "between": None}
    try:
        parts = stats.variance_components(samples)
    except ValueError:
        return out  # one case, or no case with two samples: nothing to split
    total = parts.within + parts.between
    share = parts.within / total if total > 0 else None
    return {**out, "within": parts.within, "between": parts.between, "within_share": share}


def verdicts(labels: Mapping[str, bool], results: Sequence[CaseResult]) -> dict[str, Any]:
    """Precision and recall of per-sample verdicts (`details["verdict"]`) against `labels`, by case id, with
    Wilson intervals; an unparseable answer (no verdict) counts as the wrong verdict."""
    said = [(r.details.get("verdict"), labels[r.id]) for r in results]
    verdict = [v if v is not None else not y for v, y in said]  # no answer: the wrong one
    tp = sum(1 for v, (_, y) in zip(verdict, said, strict=True) if v and y)
    predicted, actual = sum(verdict), sum(1 for _, y in said if y)

    def rate(k: int, n: int) -> dict[str, Any] | None:
        return estimate_json(stats.proportion(k, n), WILSON) if n else None

    invalid = sum(1 for v, _ in said if v is None)
    return {"precision": rate(tp, predicted), "recall": rate(tp, actual), "invalid": invalid}


def block(
    task: Task[Any],
    cases: Sequence[Case],
    results: Sequence[CaseResult],
    baselines: Sequence[Baseline] = (),
    repeat: int = 1,
) -> dict[str, Any]:
    """The report's uncertainty block for `results` over `cases` (the run's cases, in its order)."""
    samples = samples_by_case(results)
    ids = [c.id for c in cases if c.id in samples]
    means = {i: sum(samples[i]) / len(samples[i]) for i in ids}
    model = [means[i] for i in ids]
    method = interval_method(task, repeat)
    out: dict[str, Any] = {
        "unit": UNIT,
        "samples": len(results),
        "score": _mean_of(model, method),
        "baselines": [_baseline_row(b, ids, model, method) for b in baselines],
        "families": family_rows(cases, means, baselines, method),
        "detectable": detectable(model),
    }
    if any(len(s) > 1 for s in samples.values()):
        out["repeats"] = repeats({i: samples[i] for i in ids}, repeat)
    elif task.verdict_metrics is not None:
        out.update(task.verdict_metrics(cases, results))  # per sample; with repeats they would not be independent
    return out
