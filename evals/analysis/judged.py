"""A judged run's pass rate, and a judge's agreement with human grades (Cohen's kappa).

`judged_estimate` is the judged pass rate over cases (each case's samples averaged,
as for the rule score) with its interval: Wilson when each case has one sample, the
seeded bootstrap otherwise. `kappa` is Cohen's kappa of two pass/fail gradings;
`kappa_interval` its seeded percentile bootstrap over entries, whose coverage
tests/test_judge_stats.py checks by simulation against a known population kappa.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evals.analysis import stats
from evals.analysis.uncertainty import BOOTSTRAP, WILSON, estimate

__all__ = [
    "Agreement",
    "agreement",
    "judged_by_case",
    "judged_estimate",
    "kappa",
    "kappa_interval",
]

KAPPA_RESAMPLES = 4_000
KAPPA_SEED = 20_261_206


def judged_by_case(judged: Mapping[str, Any]) -> dict[str, float]:
    """Each case's judged pass rate (over its samples), from a report's `judged` block."""
    found: dict[str, list[float]] = {}
    for row in judged.get("results", []):
        found.setdefault(str(row["id"]), []).append(1.0 if row["passed"] else 0.0)
    return {cid: sum(v) / len(v) for cid, v in found.items()}


def judged_estimate(judged: Mapping[str, Any]) -> tuple[stats.Estimate, str] | None:
    """The judged pass rate over cases with its 95% interval and the method; None for an unjudged run."""
    by_case = judged_by_case(judged)
    if not by_case:
        return None
    binary = all(v in (0.0, 1.0) for v in by_case.values()) and judged.get("samples") == len(by_case)
    return estimate(list(by_case.values()), WILSON if binary else BOOTSTRAP)


def kappa(human: Sequence[bool] | NDArray[np.bool_], judge: Sequence[bool] | NDArray[np.bool_]) -> float:
    """Cohen's kappa of two pass/fail gradings of the same entries; 0 when chance agreement is total."""
    h, j = np.asarray(human, dtype=bool), np.asarray(judge, dtype=bool)
    return float(_kappas(h[None, :], j[None, :])[0])


def _kappas(h: NDArray[np.bool_], j: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Kappa of each row pair (rows are resamples)."""
    observed = (h == j).mean(axis=1)
    ph, pj = h.mean(axis=1), j.mean(axis=1)
    chance = ph * pj + (1 - ph) * (1 - pj)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (observed - chance) / (1 - chance)
    return np.where(chance >= 1.0, 0.0, value)  # both constant: no agreement beyond chance can be shown


def kappa_interval(
    human: Sequence[bool], judge: Sequence[bool], *, level: float = stats.LEVEL, seed: int = KAPPA_SEED
) -> stats.Interval:
    """Seeded percentile bootstrap interval of kappa, resampling entries with their two grades."""
    h, j = np.asarray(human, dtype=bool), np.asarray(judge, dtype=bool)
    rng = np.random.default_rng(seed)
    index = rng.integers(0, h.size, size=(KAPPA_RESAMPLES, h.size))
    values = _kappas(h[index], j[index])
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return stats.Interval(float(low), float(high), level)


@dataclass(frozen=True)
class Agreement:
    """A judge against human grades: kappa with its interval, accuracy and the confusion matrix."""

    kappa: float
    interval: stats.Interval
    n: int
    accuracy: float
    confusion: dict[str, int]  # "human pass / judge pass", ...

    def kappa_text(self) -> str:
        return f"kappa {self.kappa:.2f} [{self.interval.low:.2f}, {self.interval.high:.2f}] n={self.n}"


def agreement(human: Sequence[bool], judge: Sequence[bool], *, seed: int = KAPPA_SEED) -> Agreement:
    """Everything judge_check prints about agreement, from the two gradings in entry order."""
    h, j = np.asarray(human, dtype=bool), np.asarray(judge, dtype=bool)
    confusion = {
        f"human {a} / judge {b}": int(np.sum((h == (a == "pass")) & (j == (b == "pass"))))
        for a in ("pass", "fail")
        for b in ("pass", "fail")
    }
    return Agreement(
        kappa(h, j), kappa_interval(list(h), list(j), seed=seed), int(h.size), float((h == j).mean()), confusion
    )
