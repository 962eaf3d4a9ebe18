"""The paired comparison of two runs: its interval, the one test behind the verdict, Holm, and power.

A difference between two runs is the mean of per-case paired differences
(candidate - baseline) over the same cases, each in [-1, 1]. Its interval is the
Bonett-Price adjusted Wald interval (see `evals.analysis.stats` for why): one
pseudo-difference of +1 and one of -1 join the n observed differences, and the
interval is centre +- t(n-1) * se over those n + 2 values.

One test, one p. The verdict and every p-value printed, Holm-adjusted or recorded
come from that same t statistic: `ship` when "difference <= margin" is rejected
(one-sided p_ship < alpha/2, exactly when the interval's lower bound is above the
margin), `regress` when "difference >= 0" is rejected (p_regress < alpha/2, exactly
when the upper bound is below 0). The p-value reported is the decision's own,
2 * min(p_ship, p_regress) (capped at 1): it is below 1 - level exactly when the
verdict is ship or regress. With margin 0 it is the interval's two-sided p for "no
difference". It needs no resampling, so one changed case (or none) is no special case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evals.analysis import distributions as dist
from evals.analysis.stats import LEVEL, Estimate, Floats, Interval, Verdict, array_of, decimals_for
from evals.analysis.tail import LARGE, NO_TAIL, TAIL_ALPHA, Tail, tail_of, tail_p_batch

__all__ = [
    "MEAN_ALPHA",
    "TEST",
    "VERDICT_LEVEL",
    "Paired",
    "PairedBatch",
    "aligned",
    "difference",
    "holm",
    "holm_levels",
    "paired",
    "paired_batch",
    "ships_batch",
    "verdict",
    "verdict_decimals",
]

TEST = "adjusted Wald t, the interval's own test"
MEAN_ALPHA = (1 - LEVEL) - TAIL_ALPHA  # the mean test's share of the verdict's error budget
VERDICT_LEVEL = 1 - MEAN_ALPHA  # the level of the interval that decides (97.5%)


SCIPY_FROM = 64  # above this many values at once (simulations), scipy's vectorised t is faster to import and use


def _t_quantiles(p: float, df: Floats) -> Floats:
    """Student t quantiles for an array of degrees of freedom (few distinct: each computed once, without scipy)."""
    known = {value: dist.t_ppf(p, value) for value in {float(x) for x in df.ravel()}}
    return np.asarray([known[float(x)] for x in df.ravel()], dtype=np.float64).reshape(df.shape)


def _t_sf(t: Floats, df: Floats) -> Floats:
    """P(T > t) elementwise: without scipy for a few values (a command line), with it for many (simulations)."""
    t, df = np.broadcast_arrays(np.asarray(t, dtype=np.float64), np.asarray(df, dtype=np.float64))
    if t.size > SCIPY_FROM:
        from scipy import stats as sps  # type: ignore[import-untyped]

        return np.asarray(sps.t.sf(t, df), dtype=np.float64)
    pairs = zip(t.ravel(), df.ravel(), strict=True)
    return np.asarray([dist.t_sf(float(x), float(d)) for x, d in pairs], dtype=np.float64).reshape(t.shape)


@dataclass(frozen=True)
class PairedBatch:
    """The adjusted Wald interval's parts for many comparisons at once (one per row of differences).

    `centre` and `se` come from the n differences plus the pseudo-differences +1 and -1;
    `df` is n - 1 (at least 1). `paired` uses this for one comparison; simulations use it
    for thousands.
    """

    mean: Floats
    centre: Floats
    se: Floats
    df: Floats

    def bounds(self, level: float = LEVEL) -> tuple[Floats, Floats]:
        """(low, high) per row, clipped to [-1, 1] and widened, if need be, to hold the raw mean."""
        q = _t_quantiles(0.5 + level / 2, self.df)
        low = np.minimum(np.clip(self.centre - q * self.se, -1.0, 1.0), self.mean)
        high = np.maximum(np.clip(self.centre + q * self.se, -1.0, 1.0), self.mean)
        return low, high

    def p_ship(self, margin: float = 0.0) -> Floats:
        """One-sided p of "difference <= margin": below (1 - level) / 2 exactly when the low bound is above margin."""
        return _t_sf((self.centre - margin) / self.se, self.df)

    def p_regress(self) -> Floats:
        """One-sided p of "difference >= 0": below (1 - level) / 2 exactly when the high bound is below 0."""
        return _t_sf(-self.centre / self.se, self.df)

    def pvalues(self, margin: float = 0.0) -> Floats:
        """The decision's p: 2 * min(p_ship, p_regress), capped at 1; below 1 - level exactly when decisive."""
        return np.asarray(np.minimum(1.0, 2 * np.minimum(self.p_ship(margin), self.p_regress())), dtype=np.float64)


def paired_batch(diffs: ArrayLike) -> PairedBatch:
    """The adjusted Wald parts for each row of a (comparisons x cases) array of differences in [-1, 1]."""
    d = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    n = d.shape[-1]
    total = n + 2.0
    centre = d.sum(axis=-1) / total
    second = ((d * d).sum(axis=-1) + 2.0) / total
    se = np.sqrt(np.maximum(second - centre * centre, 0.0) / total)
    return PairedBatch(d.mean(axis=-1), centre, se, np.full(d.shape[:-1], max(n - 1, 1), dtype=np.float64))


def ships_batch(diffs: ArrayLike, margin: float = 0.0) -> NDArray[np.bool_]:
    """The verdict's ship rule for each row of a (comparisons x cases) array of differences, vectorised for
    simulations: the interval at VERDICT_LEVEL above `margin`, and no excess of large regressions."""
    d = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    low, _ = paired_batch(d).bounds(VERDICT_LEVEL)
    losses, gains = (d <= -LARGE + 1e-12).sum(axis=-1), (d >= LARGE - 1e-12).sum(axis=-1)
    return np.asarray((low > margin) & ~(tail_p_batch(losses, gains) < TAIL_ALPHA), dtype=np.bool_)


@dataclass(frozen=True)
class Paired:
    """A paired comparison of per-case scores: candidate - baseline over the same cases, against a margin."""

    difference: Estimate
    p_value: float  # the decision's p (module docstring), against `margin`
    test: str
    improved: int
    regressed: int
    unchanged: int
    centre: float
    se: float
    df: int
    margin: float = 0.0
    tail: Tail = NO_TAIL

    @property
    def n(self) -> int:
        return self.difference.n

    @property
    def mean_diff(self) -> float:
        return self.difference.mean

    @property
    def interval(self) -> Interval:
        return self.difference.interval

    @property
    def interval_pvalue(self) -> float:
        """The decision's p (kept for callers that ordered by it); the same as `p_value`."""
        return self.p_value

    def p_ship(self, margin: float | None = None) -> float:
        """One-sided p of "difference <= margin" (this comparison's margin unless given)."""
        return float(self._batch().p_ship(self.margin if margin is None else margin)[0])

    def p_regress(self) -> float:
        """One-sided p of "difference >= 0"."""
        return float(self._batch().p_regress()[0])

    def at_level(self, level: float) -> Paired:
        """The same comparison with its interval at another confidence level."""
        low, high = self._batch().bounds(level)
        interval = Interval(float(low[0]), float(high[0]), level)
        return replace(self, difference=replace(self.difference, interval=interval))

    def _batch(self) -> PairedBatch:
        return PairedBatch(
            np.array([self.mean_diff]), np.array([self.centre]), np.array([self.se]), np.array([float(self.df)])
        )


def paired(base: ArrayLike, cand: ArrayLike, *, level: float = LEVEL, margin: float = 0.0) -> Paired:
    """Compare two aligned arrays of per-case mean scores (index i is the same case in both).

    The interval and the p-value are the adjusted Wald interval's and its own t test
    against `margin` (module docstring), for 0/1 and graded scores alike.
    """
    b, c = aligned(base, cand)
    d = c - b
    batch = paired_batch(d)
    low, high = batch.bounds(level)
    estimate = Estimate(float(d.mean()), Interval(float(low[0]), float(high[0]), level), b.size)
    changed = d[np.abs(d) > 1e-12]
    return Paired(
        estimate, float(batch.pvalues(margin)[0]), TEST, int((changed > 0).sum()), int((changed < 0).sum()),
        d.size - changed.size, float(batch.centre[0]), float(batch.se[0]), int(batch.df[0]), margin, tail_of(d),
    )  # fmt: skip


def aligned(base: ArrayLike, cand: ArrayLike) -> tuple[Floats, Floats]:
    b, c = array_of(base, "baseline"), array_of(cand, "candidate")
    if b.shape != c.shape:
        raise ValueError(f"paired: baseline has {b.size} cases, candidate {c.size}; align them by case first")
    return b, c


def difference(base: ArrayLike, cand: ArrayLike, level: float = LEVEL) -> Estimate:
    """The mean paired difference (candidate - baseline) with its adjusted Wald interval, without a test."""
    return paired(base, cand, level=level).difference


def verdict(result: Paired | Interval, margin: float = 0.0) -> Verdict:
    """ship when the interval's lower bound is above `margin` (and, for a `Paired`, its tail guard finds no
    excess of large regressions), regress when its upper bound is below 0."""
    if not margin >= 0:
        raise ValueError(f"the margin must be >= 0 (a gain required to ship), got {margin}")
    interval = result.interval if isinstance(result, Paired) else result
    if interval.low > margin:
        blocked = isinstance(result, Paired) and result.tail.excess
        return "inconclusive" if blocked else "ship"
    if interval.high < 0:
        return "regress"
    return "inconclusive"


def verdict_decimals(interval: Interval, margin: float = 0.0) -> int:
    """Decimals to print `interval` so its printed bounds say what the verdict says.

    At least `decimals_for(width)`; more while a rounded bound lands on the other side
    of the margin (low) or of 0 (high) than the bound itself, as `[+0.00, +0.16]`
    would beside "the whole interval is above the margin 0".
    """
    d = decimals_for(interval.width)
    while d < 12 and not _same_side(interval, margin, d):
        d += 1
    return d


def _same_side(interval: Interval, margin: float, d: int) -> bool:
    low, high = round(interval.low, d), round(interval.high, d)
    return (low > margin) == (interval.low > margin) and (high < 0) == (interval.high < 0)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    k = p.size
    stepped = np.maximum.accumulate(np.minimum(1.0, (k - np.arange(k)) * p[order]))
    out = np.empty(k)
    out[order] = stepped
    return [float(x) for x in out]


def holm_levels(pvalues: Sequence[float], alpha: float = 1 - LEVEL) -> list[float]:
    """The confidence level for each of k comparisons' intervals so that their verdicts follow Holm.

    `pvalues` are each comparison's decision p against its margin (`Paired.p_value`), so
    the order and the stopping respect the margin. The i-th smallest (from 0) gets level
    1 - alpha/(k - i) and may be decisive only if every one before it was: its interval
    at that level is decisive exactly when its p < alpha/(k - i). The first that is not,
    and all after it, get that first one's level, at which none of them is decisive, so
    every printed interval agrees with its verdict and with `holm(pvalues)` < alpha. The
    chance of any wrong decisive verdict over the k is at most alpha (Holm 1979).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    k = p.size
    levels = np.empty(k)
    stop: float | None = None
    for i, idx in enumerate(np.argsort(p, kind="stable")):
        here = 1 - alpha / (k - i)
        if stop is None and p[idx] >= alpha / (k - i):
            stop = here
        levels[idx] = here if stop is None else stop
    return [float(x) for x in levels]
