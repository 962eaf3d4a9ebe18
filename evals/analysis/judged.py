"""A judged run's pass rate, and a judge's agreement with human grades (Cohen's kappa).

`judged_estimate` is the judged pass rate over cases (each case's samples averaged,
as for the rule score) with its interval: Wilson when each case has one sample, the
seeded bootstrap otherwise. `kappa` is Cohen's kappa of two pass/fail gradings;
`kappa_interval` its seeded BCa bootstrap over entries (scipy; the percentile interval
where BCa is undefined, as when every grade is equal), whose coverage
tests/analysis/test_judged.py checks by simulation against a known population kappa: about
95% at n=60 (kappa 0.66 and 0.8), 92-93% at n=30 and at n=120 with kappa 0.5, where the
plain percentile interval covered 91-93%.
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


def _statistic(h: NDArray[Any], j: NDArray[Any], axis: int = -1) -> NDArray[np.float64]:
    """Kappa over the last axis, for scipy's vectorised bootstrap (resamples on the leading axes)."""
    hb, jb = np.asarray(h, dtype=bool), np.asarray(j, dtype=bool)
    flat = _kappas(hb.reshape(-1, hb.shape[-1]), jb.reshape(-1, jb.shape[-1]))
    return flat.reshape(hb.shape[:-1])


def kappa_interval(
    human: Sequence[bool], judge: Sequence[bool], *, level: float = stats.LEVEL, seed: int = KAPPA_SEED
) -> stats.Interval:
    """Seeded BCa bootstrap interval of kappa, resampling entries with their two grades."""
    import warnings

    from scipy import stats as sps  # type: ignore[import-untyped]  # here: scipy costs a command line seconds

    h, j = np.asarray(human, dtype=bool), np.asarray(judge, dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate distribution: BCa's nan is replaced below
        found = sps.bootstrap(
            (h, j),
            _statistic,
            paired=True,
            vectorized=True,
            method="BCa",
            n_resamples=KAPPA_RESAMPLES,
            confidence_level=level,
            random_state=np.random.default_rng(seed),
        )
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        values = found.bootstrap_distribution
        low, high = (float(v) for v in np.quantile(values, [(1 - level) / 2, (1 + level) / 2]))
    return stats.Interval(low, high, level)


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
